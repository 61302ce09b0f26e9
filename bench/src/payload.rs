//! Request contents: keys and values of an exact size that change on every
//! write, so each request is a real update (never an "unchanged" no-op).

/// Which object a client writes on its `seq`-th request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// The client (task) number.
    pub client: usize,
    /// The key number within the client's key space.
    pub key: u64,
    /// The request number of this client (makes the value unique).
    pub seq: u64,
}

impl Slot {
    /// The `seq`-th request of `client`, cycling over `keys_per_client` keys.
    pub fn new(client: usize, seq: u64, keys_per_client: u64) -> Slot {
        Slot { client, key: seq % keys_per_client.max(1), seq }
    }

    /// The Kubernetes object name: `bench-<client>-<key>`.
    pub fn object_name(&self) -> String {
        format!("bench-{}-{}", self.client, self.key)
    }

    /// The etcd key: `bench/<client>/<key>`.
    pub fn etcd_key(&self) -> Vec<u8> {
        format!("bench/{}/{}", self.client, self.key).into_bytes()
    }
}

/// A value of exactly `size` ASCII bytes: the sequence number in hex, padded
/// with `x` (shorter sizes keep the low hex digits). Safe inside JSON strings.
pub fn value(size: usize, seq: u64) -> String {
    let hex = format!("{seq:016x}");
    if size <= hex.len() {
        return hex[hex.len() - size..].to_string();
    }
    let mut out = String::with_capacity(size);
    out.push_str(&hex);
    out.extend(std::iter::repeat_n('x', size - hex.len()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_have_the_exact_size_and_change_with_seq() {
        for size in [0, 1, 15, 16, 17, 1024, 4096] {
            assert_eq!(value(size, 7).len(), size);
        }
        assert_ne!(value(1024, 1), value(1024, 2));
        assert_ne!(value(4, 1), value(4, 2));
    }

    #[test]
    fn slots_cycle_over_the_key_space() {
        let s = Slot::new(3, 1005, 1000);
        assert_eq!(s.object_name(), "bench-3-5");
        assert_eq!(s.etcd_key(), b"bench/3/5".to_vec());
        assert_eq!(Slot::new(0, 9, 0).key, 0);
    }
}
