//! `approve NAME [-n NS]`: sets `Approved` True at the request's generation
//! (docs/spec/staged-updates.md SU-9) as a status write conditional on the version
//! read, through whichever node answers; a write that lost a race is read
//! and tried again.

use fleet_api::staged::approval::approve;
use fleet_api::staged::{approval_status_of, set_approval_status, APPROVAL_REQUEST, CLUSTER_APPROVAL_REQUEST};
use tonic::Code;

use crate::cli::ApproveArgs;
use crate::client::Client;
use crate::error::Result;
use crate::io::Io;
use crate::kind::KindArg;

/// Most attempts when the request keeps changing under the write.
const ATTEMPTS: usize = 5;

/// Runs `approve`.
pub async fn run(client: &Client, args: &ApproveArgs, io: &mut Io) -> Result<()> {
    let kind = KindArg::resolve(if args.namespace.is_some() { APPROVAL_REQUEST } else { CLUSTER_APPROVAL_REQUEST });
    let namespace = kind.namespace_for(args.namespace.as_deref());
    let what = format!("{}/{}", kind.name.to_ascii_lowercase(), args.name);
    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut request = client.get(&kind, &namespace, &args.name, attempt > 1).await?;
        let mut status = approval_status_of(&request);
        let now = fleet_api::time::now_rfc3339();
        if !approve(&mut status, &request.kind, request.metadata.generation, &now) {
            return io.out(&format!("{what} already approved\n"));
        }
        set_approval_status(&mut request, &status);
        match client.update_status(&request).await {
            Ok(_) => return io.out(&format!("{what} approved\n")),
            Err(e) if e.code() == Some(Code::Aborted) && attempt < ATTEMPTS => continue,
            Err(e) => return Err(e),
        }
    }
}
