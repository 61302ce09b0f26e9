//! The proxies of an N-node mesh: node i reaches node j only through proxy
//! (i, j), so every directed link can fail on its own. Partitions are
//! stalls, as on a real network: bytes are held, connections stay open and
//! time out at the application's pace, and flow again on heal.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use super::{Faults, Proxy, ProxyHandle};
use crate::error::Error;

/// One proxy per ordered pair of distinct nodes.
#[derive(Debug)]
pub struct Network {
    targets: BTreeMap<u64, SocketAddr>,
    links: BTreeMap<(u64, u64), Proxy>,
}

impl Network {
    /// Starts a proxy (i, j) to `targets[j]` for every ordered pair of
    /// distinct nodes, each on an ephemeral loopback port.
    pub async fn start(targets: &BTreeMap<u64, SocketAddr>) -> Result<Network, Error> {
        let mut links = BTreeMap::new();
        for from in targets.keys() {
            for (to, target) in targets {
                if from != to {
                    links.insert((*from, *to), Proxy::start(*target).await?);
                }
            }
        }
        Ok(Network { targets: targets.clone(), links })
    }

    /// The nodes of the mesh.
    pub fn nodes(&self) -> Vec<u64> {
        self.targets.keys().copied().collect()
    }

    fn proxy(&self, from: u64, to: u64) -> Result<&Proxy, Error> {
        self.links.get(&(from, to)).ok_or_else(|| Error::UnknownLink { from, to, nodes: self.nodes() })
    }

    /// The handle of link `from` → `to`.
    pub fn link(&self, from: u64, to: u64) -> Result<ProxyHandle, Error> {
        self.proxy(from, to).map(Proxy::handle)
    }

    /// The address node `from` must dial to reach node `to`.
    pub fn addr(&self, from: u64, to: u64) -> Result<SocketAddr, Error> {
        self.proxy(from, to).map(Proxy::addr)
    }

    /// Node `node`'s view of the mesh as `id=host:port,...`: every other
    /// node through its proxy, itself at its own address.
    pub fn peers_for(&self, node: u64) -> Result<String, Error> {
        let mut items = Vec::new();
        for (id, target) in &self.targets {
            let addr = if *id == node { *target } else { self.addr(node, *id)? };
            items.push(format!("{id}={addr}"));
        }
        Ok(items.join(","))
    }

    /// Makes everything `from` sends to `to` stall, leaving `to` → `from`
    /// intact: requests on `from`'s connections to `to` and responses on
    /// `to`'s connections to `from` are held.
    pub fn one_way(&self, from: u64, to: u64) -> Result<(), Error> {
        let outgoing = self.link(from, to)?;
        let incoming = self.link(to, from)?;
        outgoing.update(|f| f.block_forward = true);
        incoming.update(|f| f.block_backward = true);
        Ok(())
    }

    /// Cuts every link between a node of `a` and a node of `b`, both ways.
    pub fn partition(&self, a: &[u64], b: &[u64]) -> Result<(), Error> {
        for x in a {
            for y in b {
                if x != y {
                    self.one_way(*x, *y)?;
                    self.one_way(*y, *x)?;
                }
            }
        }
        Ok(())
    }

    /// Cuts `node` off from every other node, both ways.
    pub fn isolate(&self, node: u64) -> Result<(), Error> {
        let others: Vec<u64> = self.targets.keys().copied().filter(|id| *id != node).collect();
        if !self.targets.contains_key(&node) {
            return Err(Error::UnknownLink { from: node, to: node, nodes: self.nodes() });
        }
        self.partition(&[node], &others)
    }

    /// Closes every connection from and to `node` and refuses new ones, as
    /// if its peers saw it crash (until [`heal`](Network::heal)).
    pub fn disconnect(&self, node: u64) -> Result<(), Error> {
        for other in self.nodes().into_iter().filter(|id| *id != node) {
            self.link(node, other)?.update(|f| f.drop = true);
            self.link(other, node)?.update(|f| f.drop = true);
        }
        Ok(())
    }

    /// Sets the faults of every link at once (e.g. a delay everywhere).
    pub fn set_all(&self, faults: Faults) {
        for proxy in self.links.values() {
            proxy.handle().set(faults);
        }
    }

    /// Clears every fault on every link.
    pub fn heal(&self) {
        self.set_all(Faults::default());
    }
}
