//! Encoding of log entries and peer messages: MessagePack with field names,
//! compact and self-describing (objects inside commands are free-form JSON).

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::Error;

/// Encodes a value for the log or the wire.
pub fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, Error> {
    rmp_serde::to_vec_named(value).map_err(|e| Error::Codec(e.to_string()))
}

/// Decodes a value from the log or the wire.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Error> {
    rmp_serde::from_slice(bytes).map_err(|e| Error::Codec(e.to_string()))
}
