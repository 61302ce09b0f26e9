//! The agent's connection to the hub: mTLS with its identity, any node of the
//! list, moving to the next one when a node is down.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use fleet_proto::fleet::fleet_client::FleetClient;
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};

use crate::AgentError;

/// Channels to the hub nodes, one in use at a time.
pub struct Hub {
    endpoints: Vec<String>,
    channels: Mutex<Vec<Option<Channel>>>,
    current: AtomicUsize,
    tls: Mutex<ClientTlsConfig>,
}

fn retryable(status: &tonic::Status) -> bool {
    matches!(status.code(), tonic::Code::Unavailable | tonic::Code::DeadlineExceeded | tonic::Code::Unknown)
}

impl Hub {
    /// A hub client presenting `tls`'s identity.
    pub fn new(endpoints: Vec<String>, tls: ClientTlsConfig) -> Hub {
        let n = endpoints.len();
        Hub { endpoints, channels: Mutex::new(vec![None; n]), current: AtomicUsize::new(0), tls: Mutex::new(tls) }
    }

    /// Switches to a new identity (after renewal): new connections use it.
    pub fn set_tls(&self, tls: ClientTlsConfig) {
        *self.tls.lock().unwrap_or_else(|p| p.into_inner()) = tls;
        self.channels.lock().unwrap_or_else(|p| p.into_inner()).iter_mut().for_each(|c| *c = None);
    }

    /// The node in use.
    pub fn endpoint(&self) -> &str {
        &self.endpoints[self.current.load(Ordering::Relaxed) % self.endpoints.len()]
    }

    /// A client of node `index` (lazily connecting).
    pub fn client_of(&self, index: usize) -> Result<FleetClient<Channel>, AgentError> {
        let mut channels = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(channel) = &channels[index] {
            return Ok(FleetClient::new(channel.clone()));
        }
        let tls = self.tls.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let endpoint = &self.endpoints[index];
        let channel = Endpoint::from_shared(format!("https://{endpoint}"))
            .and_then(|e| e.tls_config(tls))
            .map_err(|e| AgentError::Config(format!("--hub {endpoint}: {e}")))?
            .connect_timeout(Duration::from_secs(2))
            .http2_keep_alive_interval(Duration::from_secs(5))
            .keep_alive_timeout(Duration::from_secs(5))
            .connect_lazy();
        channels[index] = Some(channel.clone());
        Ok(FleetClient::new(channel))
    }

    /// A client of the node in use, and its index.
    pub fn client(&self) -> Result<(usize, FleetClient<Channel>), AgentError> {
        let index = self.current.load(Ordering::Relaxed) % self.endpoints.len();
        Ok((index, self.client_of(index)?))
    }

    /// Moves on from node `failed` (if it is still the one in use).
    pub fn rotate(&self, failed: usize) {
        let next = (failed + 1) % self.endpoints.len();
        let _ = self.current.compare_exchange(failed, next, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Calls the hub, trying each node once while they are unreachable.
    pub async fn call<T, F, Fut>(&self, f: F) -> Result<T, AgentError>
    where
        F: Fn(FleetClient<Channel>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        let mut last = None;
        for _ in 0..self.endpoints.len() {
            let (index, client) = self.client()?;
            match f(client).await {
                Ok(reply) => return Ok(reply.into_inner()),
                Err(status) if retryable(&status) => {
                    tracing::debug!(endpoint = %self.endpoints[index], "hub node unavailable: {}", status.message());
                    self.rotate(index);
                    last = Some(status);
                }
                Err(status) => return Err(AgentError::from_status(&status)),
            }
        }
        Err(last.map(|s| AgentError::from_status(&s)).unwrap_or_else(|| AgentError::Hub("no hub endpoints".into())))
    }
}
