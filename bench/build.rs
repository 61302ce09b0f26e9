//! Compiles the minimal etcd KV protocol with protox (pure Rust; no system protoc),
//! exactly as `proto/build.rs` compiles Fleet's own.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = ["proto/etcd_kv.proto"];
    for p in protos {
        println!("cargo:rerun-if-changed={p}");
    }
    let fds = protox::compile(protos, ["proto"])?;
    // The server is generated too: the tests serve a stand-in KV on loopback.
    tonic_prost_build::configure().build_server(true).build_client(true).compile_fds(fds)?;
    Ok(())
}
