//! Unit tests of the wire format.

use super::*;
use crate::error::Malformed;
use proptest::prelude::*;

#[test]
fn magic_values_spell_their_names() {
    assert_eq!(&NBDMAGIC.to_be_bytes(), b"NBDMAGIC");
    assert_eq!(&IHAVEOPT.to_be_bytes(), b"IHAVEOPT");
}

#[test]
fn greeting_is_magic_magic_flags() {
    let g = greeting(HandshakeFlags::FIXED_NEWSTYLE | HandshakeFlags::NO_ZEROES);
    assert_eq!(&g[..8], b"NBDMAGIC");
    assert_eq!(&g[8..16], b"IHAVEOPT");
    assert_eq!(&g[16..], &[0, 3]);
}

#[test]
fn client_flags_refuse_unknown_bits() {
    assert_eq!(
        decode_client_flags([0, 0, 0, 3]),
        Ok(ClientFlags::FIXED_NEWSTYLE | ClientFlags::NO_ZEROES)
    );
    assert_eq!(
        decode_client_flags([0, 0, 0, 4]),
        Err(Malformed::ClientFlags(4))
    );
}

#[test]
fn request_round_trips_and_checks_magic() {
    let r = Request {
        flags: 1,
        kind: cmd::WRITE,
        cookie: 0x0102_0304_0506_0708,
        offset: 1 << 40,
        len: 4096,
    };
    let b = r.encode();
    assert_eq!(&b[..4], &[0x25, 0x60, 0x95, 0x13]);
    assert_eq!(Request::decode(&b), Ok(r));
    let mut bad = b;
    bad[0] ^= 1;
    assert!(matches!(
        Request::decode(&bad),
        Err(Malformed::RequestMagic(_))
    ));
}

#[test]
fn option_header_round_trips() {
    let h = OptionHeader {
        option: opt::GO,
        len: 10,
    };
    assert_eq!(OptionHeader::decode(&h.encode()), Ok(h));
    let mut bad = h.encode();
    bad[7] = 0;
    assert!(OptionHeader::decode(&bad).is_err());
}

#[test]
fn info_request_round_trips_and_refuses_truncation() {
    let d = encode_info_request("disk", &[info::NAME, info::BLOCK_SIZE]);
    assert_eq!(
        decode_info_request(&d),
        Ok(InfoRequest {
            name: "disk".into(),
            infos: vec![1, 3]
        })
    );
    assert_eq!(
        decode_info_request(&d[..d.len() - 1]),
        Err(Malformed::Truncated)
    );
    let mut long = d.clone();
    long.push(0);
    assert_eq!(decode_info_request(&long), Err(Malformed::TrailingBytes));
    // A name length that points past the data.
    let mut lie = d;
    lie[3] = 200;
    assert_eq!(decode_info_request(&lie), Err(Malformed::Truncated));
}

#[test]
fn meta_request_round_trips() {
    let d = encode_meta_request("", &["base:allocation", "qemu:dirty-bitmap:x"]);
    let m = decode_meta_request(&d).unwrap();
    assert_eq!(m.name, "");
    assert_eq!(m.queries, vec!["base:allocation", "qemu:dirty-bitmap:x"]);
    assert_eq!(
        decode_meta_request(&d[..d.len() - 3]),
        Err(Malformed::Truncated)
    );
}

#[test]
fn strings_with_nul_or_bad_utf8_are_refused() {
    let mut d = encode_info_request("a\0b", &[]);
    assert_eq!(decode_info_request(&d), Err(Malformed::Nul));
    d = encode_info_request("ab", &[]);
    d[4] = 0xff;
    assert_eq!(decode_info_request(&d), Err(Malformed::NotUtf8));
}

#[test]
fn replies_have_the_documented_layout() {
    let s = simple_reply(errno::EINVAL, 7);
    assert_eq!(&s[..4], &[0x67, 0x44, 0x66, 0x98]);
    assert_eq!(&s[4..8], &[0, 0, 0, 22]);
    assert_eq!(&s[8..], &7u64.to_be_bytes());

    let h = offset_data_header(9, 512, 4096);
    assert_eq!(&h[..4], &[0x66, 0x8e, 0x33, 0xef]);
    assert_eq!(&h[4..6], &[0, 1]); // DONE
    assert_eq!(&h[6..8], &[0, 1]); // OFFSET_DATA
    assert_eq!(&h[16..20], &(4096u32 + 8).to_be_bytes());
    assert_eq!(&h[20..], &512u64.to_be_bytes());

    let mut out = Vec::new();
    encode_error_chunk(&mut out, 3, errno::EIO, "bad");
    assert_eq!(out.len(), 20 + 6 + 3);
    assert_eq!(&out[6..8], &[0x80, 0x01]);
    assert_eq!(&out[16..20], &9u32.to_be_bytes());
    assert_eq!(&out[20..24], &5u32.to_be_bytes());
    assert_eq!(&out[24..26], &3u16.to_be_bytes());

    out.clear();
    let e = [
        Extent {
            len: 4096,
            flags: 3,
        },
        Extent { len: 512, flags: 0 },
    ];
    encode_block_status(&mut out, 3, 1, &e);
    assert_eq!(out.len(), 20 + 4 + 16);
    assert_eq!(&out[16..20], &20u32.to_be_bytes());
    assert_eq!(&out[20..24], &1u32.to_be_bytes());
    assert_eq!(&out[24..28], &4096u32.to_be_bytes());
    assert_eq!(&out[28..32], &3u32.to_be_bytes());
}

#[test]
fn option_replies_have_the_documented_layout() {
    let mut out = Vec::new();
    encode_option_reply(&mut out, opt::GO, rep::ERR_UNSUP, b"no");
    assert_eq!(&out[..8], &OPT_REPLY_MAGIC.to_be_bytes());
    assert_eq!(&out[8..12], &7u32.to_be_bytes());
    assert_eq!(&out[12..16], &0x8000_0001u32.to_be_bytes());
    assert_eq!(&out[16..20], &2u32.to_be_bytes());
    assert_eq!(&out[20..], b"no");
    assert_eq!(info_export(1, TransmissionFlags::HAS_FLAGS).len(), 12);
    assert_eq!(info_block_size(1, 4096, 1 << 25).len(), 14);
    assert_eq!(
        encode_export_name_reply(5, TransmissionFlags::HAS_FLAGS, false).len(),
        134
    );
    assert_eq!(
        encode_export_name_reply(5, TransmissionFlags::HAS_FLAGS, true).len(),
        10
    );
}

#[test]
fn error_messages_are_cut_on_a_character_boundary() {
    let msg = "é".repeat(MAX_STRING);
    let mut out = Vec::new();
    encode_error_chunk(&mut out, 0, errno::EIO, &msg);
    let len = u16::from_be_bytes([out[24], out[25]]) as usize;
    assert!(len <= MAX_STRING);
    assert!(std::str::from_utf8(&out[26..26 + len]).is_ok());
}

#[test]
fn errno_mapping_follows_the_protocol() {
    assert_eq!(nbd_errno(libc::EDQUOT), errno::ENOSPC);
    assert_eq!(nbd_errno(libc::EFBIG), errno::ENOSPC);
    assert_eq!(nbd_errno(libc::EROFS), errno::EPERM);
    assert_eq!(nbd_errno(libc::EBADF), errno::EIO);
    assert_eq!(nbd_errno(libc::EOPNOTSUPP), errno::EIO);
}

proptest! {
    #[test]
    fn decoders_never_panic(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = decode_info_request(&data);
        let _ = decode_meta_request(&data);
        if data.len() >= REQUEST_LEN {
            let mut h = [0u8; REQUEST_LEN];
            h.copy_from_slice(&data[..REQUEST_LEN]);
            let _ = Request::decode(&h);
        }
        if data.len() >= OPTION_HEADER_LEN {
            let mut h = [0u8; OPTION_HEADER_LEN];
            h.copy_from_slice(&data[..OPTION_HEADER_LEN]);
            let _ = OptionHeader::decode(&h);
        }
    }

    #[test]
    fn info_requests_round_trip(name in "[a-z0-9/_-]{0,64}", infos in proptest::collection::vec(any::<u16>(), 0..8)) {
        let d = encode_info_request(&name, &infos);
        prop_assert_eq!(decode_info_request(&d), Ok(InfoRequest { name, infos }));
    }
}
