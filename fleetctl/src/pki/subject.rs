//! User certificates whose subject holds several O (group) attributes,
//! which rcgen cannot write (its distinguished name keeps one value per
//! attribute type). rcgen makes and signs the certificate with the CN
//! alone; the subject is then replaced in the to-be-signed part, which is
//! signed again with the same CA key and algorithm.

use base64::Engine;
use rcgen::{KeyPair, SigningKey};

use crate::error::{Error, Result};

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID: u8 = 0x06;
const UTF8_STRING: u8 = 0x0c;
const BIT_STRING: u8 = 0x03;
const VERSION: u8 = 0xa0;
/// 2.5.4.3 and 2.5.4.10, DER-encoded.
const OID_COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];
const OID_ORGANIZATION: &[u8] = &[0x55, 0x04, 0x0a];

fn malformed(what: &str) -> Error {
    Error::CertificateEncoding(format!("the certificate rcgen made has an unexpected shape: {what}"))
}

/// One DER element: tag, length, content.
fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len.to_be_bytes().into_iter().skip_while(|b| *b == 0).collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

/// The first element of `bytes`: its tag, its whole encoding and its content.
fn element(bytes: &[u8]) -> Result<(u8, &[u8], &[u8])> {
    let (&tag, rest) = bytes.split_first().ok_or_else(|| malformed("an element is missing"))?;
    let (&first, rest) = rest.split_first().ok_or_else(|| malformed("a length is missing"))?;
    let (len, header) = if first < 0x80 {
        (first as usize, 2)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return Err(malformed("a length is invalid"));
        }
        (rest[..n].iter().fold(0usize, |acc, b| (acc << 8) | *b as usize), 2 + n)
    };
    let end = header
        .checked_add(len)
        .filter(|end| *end <= bytes.len())
        .ok_or_else(|| malformed("an element is cut short"))?;
    Ok((tag, &bytes[..end], &bytes[header..end]))
}

/// The subject `O=<group>, ..., CN=<name>` (each attribute its own RDN,
/// as Go's and OpenSSL's tools write them).
pub fn subject(name: &str, groups: &[String]) -> Vec<u8> {
    let attribute = |oid: &[u8], value: &str| {
        tlv(SET, &tlv(SEQUENCE, &[tlv(OID, oid), tlv(UTF8_STRING, value.as_bytes())].concat()))
    };
    let mut rdns: Vec<u8> = groups.iter().flat_map(|g| attribute(OID_ORGANIZATION, g)).collect();
    rdns.extend(attribute(OID_COMMON_NAME, name));
    tlv(SEQUENCE, &rdns)
}

/// `certificate` (DER, signed by `ca_key`) with its subject replaced by
/// `subject` (DER) and signed again by `ca_key`, as PEM.
pub fn with_subject(certificate: &[u8], subject: &[u8], ca_key: &KeyPair) -> Result<String> {
    let (_, _, outer) = element(certificate)?;
    let (_, tbs, tbs_content) = element(outer)?;
    let (_, algorithm, _) = element(&outer[tbs.len()..])?;
    // version, serial, signature algorithm, issuer, validity, subject, ...
    let mut fields = Vec::new();
    let mut rest = tbs_content;
    while !rest.is_empty() {
        let (tag, whole, _) = element(rest)?;
        fields.push((tag, whole));
        rest = &rest[whole.len()..];
    }
    let subject_at = if fields.first().map(|f| f.0) == Some(VERSION) { 5 } else { 4 };
    if fields.len() <= subject_at || fields[subject_at].0 != SEQUENCE {
        return Err(malformed("no subject"));
    }
    let content: Vec<u8> = fields
        .iter()
        .enumerate()
        .flat_map(|(i, (_, whole))| if i == subject_at { subject.to_vec() } else { whole.to_vec() })
        .collect();
    let tbs = tlv(SEQUENCE, &content);
    let signature = ca_key.sign(&tbs)?;
    let bits = [&[0u8][..], &signature].concat();
    let der = tlv(SEQUENCE, &[tbs, algorithm.to_vec(), tlv(BIT_STRING, &bits)].concat());
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let lines: Vec<&str> = body.as_bytes().chunks(64).map(|c| std::str::from_utf8(c).unwrap_or_default()).collect();
    Ok(format!("-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n", lines.join("\n")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_use_the_long_form_past_127_bytes() {
        assert_eq!(tlv(0x04, &[1, 2]), vec![0x04, 2, 1, 2]);
        let long = tlv(0x04, &[0; 300]);
        assert_eq!(&long[..4], &[0x04, 0x82, 0x01, 0x2c]);
        let (tag, whole, content) = element(&long).unwrap();
        assert_eq!((tag, whole.len(), content.len()), (0x04, 304, 300));
        assert!(element(&long[..100]).is_err());
        assert!(element(&[0x30]).is_err());
    }
}
