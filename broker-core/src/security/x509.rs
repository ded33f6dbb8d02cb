//! Who a TLS client's certificate names: the subject's distinguished name, written as Kafka's
//! default principal builder writes it (Java's `X500Principal.getName()`, RFC 2253: the most
//! specific name first, `CN=alice,OU=eng,O=Acme,C=GB`), so that a principal `User:CN=…` here is
//! the one an operator would write in Kafka's ACLs. Only the DER of the certificate is read,
//! after rustls verified it; anything unexpected in it is `None`, never a panic.

/// The subject DN of a DER certificate (RFC 5280), in RFC 2253 form.
pub fn subject_dn(certificate: &[u8]) -> Option<String> {
    let (mut cert, _) = Der::new(certificate).expect(SEQUENCE)?;
    let (mut tbs, _) = cert.expect(SEQUENCE)?;
    if tbs.peek() == Some(VERSION) {
        tbs.any()?;
    }
    tbs.expect(INTEGER)?; // serial number
    tbs.expect(SEQUENCE)?; // signature algorithm
    tbs.expect(SEQUENCE)?; // issuer
    tbs.expect(SEQUENCE)?; // validity
    let (mut name, _) = tbs.expect(SEQUENCE)?;
    let mut rdns = Vec::new();
    while !name.is_empty() {
        let (mut set, _) = name.expect(SET)?;
        let mut parts = Vec::new();
        while !set.is_empty() {
            let (mut pair, _) = set.expect(SEQUENCE)?;
            let (oid, _) = pair.expect(OID)?;
            let (tag, value) = pair.any()?;
            parts.push(format!("{}={}", keyword(oid.bytes)?, text(tag, value.bytes)));
        }
        rdns.push(parts.join("+"));
    }
    rdns.reverse();
    Some(rdns.join(","))
}

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const INTEGER: u8 = 0x02;
const OID: u8 = 0x06;
/// `[0] EXPLICIT Version` at the start of a TBSCertificate.
const VERSION: u8 = 0xa0;

/// The string types an attribute value comes in (UTF8String, PrintableString, T61String,
/// IA5String); other types are written as `#` and their DER in hex, as RFC 2253 says.
const string_tags: [u8; 4] = [0x0c, 0x13, 0x14, 0x16];

/// A DER reader over a slice: each call takes one element off the front.
struct Der<'a> {
    bytes: &'a [u8],
}

impl<'a> Der<'a> {
    fn new(bytes: &'a [u8]) -> Der<'a> {
        Der { bytes }
    }

    fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.first().copied()
    }

    /// The next element (tag and contents); a length past the input, or of more than four
    /// bytes, is None.
    fn any(&mut self) -> Option<(u8, Der<'a>)> {
        let (&tag, rest) = self.bytes.split_first()?;
        let (&first, rest) = rest.split_first()?;
        let (len, rest) = if first < 0x80 {
            (first as usize, rest)
        } else {
            let n = (first & 0x7f) as usize;
            if n == 0 || n > 4 || rest.len() < n {
                return None;
            }
            (rest[..n].iter().fold(0usize, |len, b| len << 8 | *b as usize), &rest[n..])
        };
        if rest.len() < len {
            return None;
        }
        self.bytes = &rest[len..];
        Some((tag, Der::new(&rest[..len])))
    }

    /// The next element's contents, if it has tag `tag`.
    fn expect(&mut self, tag: u8) -> Option<(Der<'a>, u8)> {
        let (got, inner) = self.any()?;
        (got == tag).then_some((inner, got))
    }
}

/// An attribute type's RFC 2253 keyword (Java's set), or its OID in dotted form.
fn keyword(oid: &[u8]) -> Option<String> {
    let known: &[(&[u8], &str)] = &[
        (&[0x55, 0x04, 0x03], "CN"),
        (&[0x55, 0x04, 0x06], "C"),
        (&[0x55, 0x04, 0x07], "L"),
        (&[0x55, 0x04, 0x08], "ST"),
        (&[0x55, 0x04, 0x09], "STREET"),
        (&[0x55, 0x04, 0x0a], "O"),
        (&[0x55, 0x04, 0x0b], "OU"),
        (&[0x09, 0x92, 0x26, 0x89, 0x93, 0xf2, 0x2c, 0x64, 0x01, 0x19], "DC"),
        (&[0x09, 0x92, 0x26, 0x89, 0x93, 0xf2, 0x2c, 0x64, 0x01, 0x01], "UID"),
    ];
    if let Some((_, name)) = known.iter().find(|(o, _)| *o == oid) {
        return Some(name.to_string());
    }
    let (&first, rest) = oid.split_first()?;
    let mut arcs = vec![(first / 40) as u64, (first % 40) as u64];
    let mut arc = 0u64;
    for &b in rest {
        arc = arc.checked_mul(128)? | (b & 0x7f) as u64;
        if b & 0x80 == 0 {
            arcs.push(arc);
            arc = 0;
        }
    }
    Some(arcs.iter().map(u64::to_string).collect::<Vec<_>>().join("."))
}

/// An attribute value in RFC 2253 form: a string escaped, anything else `#` and hex.
fn text(tag: u8, value: &[u8]) -> String {
    let string = string_tags.contains(&tag).then(|| std::str::from_utf8(value).ok()).flatten();
    let Some(s) = string else {
        let mut hex = format!("#{tag:02x}");
        let len = value.len();
        if len < 0x80 {
            hex.push_str(&format!("{len:02x}"));
        } else {
            let bytes = (len as u32).to_be_bytes();
            let skip = bytes.iter().take_while(|b| **b == 0).count();
            hex.push_str(&format!("{:02x}", 0x80 | (4 - skip)));
            bytes[skip..].iter().for_each(|b| hex.push_str(&format!("{b:02x}")));
        }
        value.iter().for_each(|b| hex.push_str(&format!("{b:02x}")));
        return hex;
    };
    let mut out = String::with_capacity(s.len());
    let last = s.chars().count().saturating_sub(1);
    for (i, c) in s.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';') || (i == 0 && (c == '#' || c == ' ')) || (i == last && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn certificate(parts: &[(rcgen::DnType, &str)]) -> Vec<u8> {
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        for (kind, value) in parts {
            params.distinguished_name.push(kind.clone(), *value);
        }
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn the_subject_reads_as_javas_rfc2253_most_specific_first() {
        use rcgen::DnType;
        let der = certificate(&[(DnType::CountryName, "GB"), (DnType::OrganizationName, "Acme, Ltd"), (DnType::OrganizationalUnitName, "eng"), (DnType::CommonName, "alice")]);
        assert_eq!(subject_dn(&der).as_deref(), Some("CN=alice,OU=eng,O=Acme\\, Ltd,C=GB"));
        let der = certificate(&[(DnType::CommonName, " #bob ")]);
        assert_eq!(subject_dn(&der).as_deref(), Some("CN=\\ #bob\\ "));
        let der = certificate(&[(DnType::CustomDnType(vec![1, 2, 840, 113549, 1, 9, 1]), "a@b.c")]);
        assert_eq!(subject_dn(&der).as_deref(), Some("1.2.840.113549.1.9.1=a@b.c"));
    }

    #[test]
    fn anything_that_is_not_a_certificate_is_none() {
        let der = certificate(&[(rcgen::DnType::CommonName, "alice")]);
        for cut in [0, 1, 2, 10, der.len() / 2, der.len() - 1] {
            // A cut certificate's outer length runs past its bytes.
            assert_eq!(subject_dn(&der[..cut]), None, "cut at {cut}");
        }
        assert_eq!(subject_dn(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]), None);
        assert_eq!(subject_dn(&[0x30, 0x89, 0, 0, 0, 0, 0, 0, 0, 0, 1]), None);
        assert_eq!(subject_dn(b"-----BEGIN CERTIFICATE-----"), None);
    }
}
