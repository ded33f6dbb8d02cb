//! Certificates for the TLS tests, made afresh by each test with rcgen and written as PEM files
//! the way Kafka's PEM stores and its clients take them: a CA; a broker keystore (key and chain)
//! valid for 127.0.0.1 and localhost, also usable as a client certificate (brokers present it to
//! each other), and one valid for the name localhost alone; a client certificate for `CN=alice,OU=eng`; and a second, untrusted CA with a
//! client certificate of its own.

use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose};
use std::path::{Path, PathBuf};

pub struct Certs {
    pub dir: PathBuf,
}

/// A CA: its certificate and key.
struct Ca {
    cert: rcgen::Certificate,
    key: KeyPair,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        let key = KeyPair::generate().expect("CA key");
        Ca { cert: params.self_signed(&key).expect("self-signed CA"), key }
    }

    /// A leaf certificate and its key, signed by this CA.
    fn issue(&self, names: &[&str], subject: &[(DnType, &str)], usages: Vec<ExtendedKeyUsagePurpose>) -> (String, String) {
        let mut params = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).expect("leaf params");
        params.distinguished_name = rcgen::DistinguishedName::new();
        for (kind, value) in subject {
            params.distinguished_name.push(kind.clone(), *value);
        }
        params.extended_key_usages = usages;
        let key = KeyPair::generate().expect("leaf key");
        let cert = params.signed_by(&key, &self.cert, &self.key).expect("signed leaf");
        (cert.pem(), key.serialize_pem())
    }
}

impl Certs {
    /// Writes every file into `dir`.
    pub fn write(dir: &Path) -> Certs {
        use ExtendedKeyUsagePurpose::{ClientAuth, ServerAuth};
        std::fs::create_dir_all(dir).expect("certs dir");
        let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).expect("write a PEM file");
        let ca = Ca::new("Seedlog test CA");
        write("ca.pem", &ca.cert.pem());
        let (cert, key) = ca.issue(&["127.0.0.1", "localhost"], &[(DnType::OrganizationName, "Seedlog"), (DnType::CommonName, "broker")], vec![ServerAuth, ClientAuth]);
        write("broker.pem", &format!("{key}{cert}{}", ca.cert.pem()));
        // Valid for the name localhost only, not for any address.
        let (cert, key) = ca.issue(&["localhost"], &[(DnType::CommonName, "broker-by-name")], vec![ServerAuth, ClientAuth]);
        write("broker-by-name.pem", &format!("{key}{cert}{}", ca.cert.pem()));
        let (cert, key) = ca.issue(&[], &[(DnType::OrganizationalUnitName, "eng"), (DnType::CommonName, "alice")], vec![ClientAuth]);
        write("alice.crt", &cert);
        write("alice.key", &key);
        let rogue = Ca::new("Nobody's CA");
        write("rogue-ca.pem", &rogue.cert.pem());
        let (cert, key) = rogue.issue(&[], &[(DnType::CommonName, "alice")], vec![ClientAuth]);
        write("rogue-alice.crt", &cert);
        write("rogue-alice.key", &key);
        Certs { dir: dir.to_path_buf() }
    }

    pub fn path(&self, name: &str) -> String {
        self.dir.join(name).to_string_lossy().into_owned()
    }
}
