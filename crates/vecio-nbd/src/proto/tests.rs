//! Unit tests of the wire format.

use super::Malformed;
use super::*;
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
        kind: Command::Write.into(),
        cookie: 0x0102_0304_0506_0708,
        offset: 1 << 40,
        len: 4096,
    };
    let b = r.encode().unwrap();
    assert_eq!(&b[..4], &[0x25, 0x60, 0x95, 0x13]);
    assert_eq!(&b[24..], &4096u32.to_be_bytes());
    assert_eq!(Request::decode(&b), Ok(r));
    assert_eq!(r.command(), Ok(Command::Write));
    let mut bad = b;
    bad[0] ^= 1;
    assert!(matches!(
        Request::decode(&bad),
        Err(Malformed::RequestMagic(_))
    ));
    // A compact request cannot carry a 64-bit length; an extended one can.
    let big = Request { len: 5 << 30, ..r };
    assert_eq!(big.encode(), None);
    let e = big.encode_extended();
    assert_eq!(&e[..4], &[0x21, 0xe4, 0x1c, 0x71]);
    assert_eq!(&e[24..], &(5u64 << 30).to_be_bytes());
    assert_eq!(Request::decode_extended(&e), Ok(big));
    // Each framing refuses the other's magic.
    let mut compact_in_ext = [0u8; EXTENDED_REQUEST_LEN];
    compact_in_ext[..REQUEST_LEN].copy_from_slice(&b);
    assert!(Request::decode_extended(&compact_in_ext).is_err());
}

#[test]
fn payload_lengths_follow_the_framing() {
    let w = Request {
        flags: 0,
        kind: Command::Write.into(),
        cookie: 1,
        offset: 0,
        len: 512,
    };
    assert_eq!(w.payload_len(Framing::Structured), 512);
    // Extended: a write has its payload with or without PAYLOAD_LEN (qemu 10 sends none).
    assert_eq!(w.payload_len(Framing::Extended), 512);
    let pl = CmdFlags::PAYLOAD_LEN.bits();
    assert_eq!(
        Request { flags: pl, ..w }.payload_len(Framing::Extended),
        512
    );
    let bs = Request {
        kind: Command::BlockStatus.into(),
        flags: pl,
        len: 12,
        ..w
    };
    assert_eq!(bs.payload_len(Framing::Extended), 12);
    assert_eq!(bs.payload_len(Framing::Structured), 0);
}

#[test]
fn block_status_filters_are_eight_bytes_and_ids() {
    let f = BlockStatusFilter {
        len: 8 << 30,
        ids: vec![1, 7],
    };
    let d = f.encode();
    assert_eq!(d.len(), 16);
    assert_eq!(BlockStatusFilter::decode(&d), Some(f));
    assert_eq!(BlockStatusFilter::decode(&d[..8]), None);
    assert_eq!(BlockStatusFilter::decode(&d[..10]), None);
    assert_eq!(BlockStatusFilter::decode(&d[..3]), None);
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
    let s = simple_reply(Some(Errno::EINVAL), 7);
    assert_eq!(&s[..4], &[0x67, 0x44, 0x66, 0x98]);
    assert_eq!(&s[4..8], &[0, 0, 0, 22]);
    assert_eq!(&s[8..], &7u64.to_be_bytes());
    assert_eq!(&simple_reply(None, 7)[4..8], &[0, 0, 0, 0]);

    let to = ReplyTo {
        cookie: 9,
        offset: 512,
    };
    let h = offset_data_header(Framing::Structured, to, 512, 4096, true);
    assert_eq!(h.len(), 28);
    assert_eq!(&h[..4], &[0x66, 0x8e, 0x33, 0xef]);
    assert_eq!(&h[4..6], &[0, 1]); // DONE
    assert_eq!(&h[6..8], &[0, 1]); // OFFSET_DATA
    assert_eq!(&h[16..20], &(4096u32 + 8).to_be_bytes());
    assert_eq!(&h[20..], &512u64.to_be_bytes());

    let mut out = Vec::new();
    let to = ReplyTo {
        cookie: 3,
        offset: 0,
    };
    encode_error_chunk(&mut out, Framing::Structured, to, Errno::EIO, "bad");
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
    encode_block_status(&mut out, Framing::Structured, to, 1, &e);
    assert_eq!(out.len(), 20 + 4 + 16);
    assert_eq!(&out[6..8], &[0, 5]);
    assert_eq!(&out[16..20], &20u32.to_be_bytes());
    assert_eq!(&out[20..24], &1u32.to_be_bytes());
    assert_eq!(&out[24..28], &4096u32.to_be_bytes());
    assert_eq!(&out[28..32], &3u32.to_be_bytes());
}

#[test]
fn extended_replies_have_the_documented_layout() {
    let to = ReplyTo {
        cookie: 9,
        offset: 1 << 33,
    };
    let x = Framing::Extended;
    let h = offset_data_header(x, to, (1 << 33) + 512, 4096, true);
    assert_eq!(h.len(), 40);
    assert_eq!(&h[..4], &EXTENDED_REPLY_MAGIC.to_be_bytes());
    assert_eq!(&h[4..6], &[0, 1]); // DONE
    assert_eq!(&h[6..8], &[0, 1]); // OFFSET_DATA
    assert_eq!(&h[8..16], &9u64.to_be_bytes());
    assert_eq!(&h[16..24], &(1u64 << 33).to_be_bytes()); // the request's offset
    assert_eq!(&h[24..32], &(4096u64 + 8).to_be_bytes());
    assert_eq!(&h[32..], &((1u64 << 33) + 512).to_be_bytes());

    let hole = offset_hole_chunk(x, to, 1 << 33, 4096, false);
    assert_eq!(hole.len(), 44);
    assert_eq!(&hole[4..6], &[0, 0]);
    assert_eq!(&hole[6..8], &[0, 2]);
    assert_eq!(&hole[24..32], &12u64.to_be_bytes());
    assert_eq!(
        &none_chunk(x, to)[..],
        &chunk_header(x, ReplyFlags::DONE, ReplyType::None, to, 0)[..]
    );

    let mut out = Vec::new();
    let e = [
        Extent {
            len: 6 << 30,
            flags: 3,
        },
        Extent { len: 512, flags: 0 },
    ];
    encode_block_status(&mut out, x, to, 1, &e);
    assert_eq!(out.len(), 32 + 8 + 32);
    assert_eq!(&out[6..8], &[0, 6]); // BLOCK_STATUS_EXT
    assert_eq!(&out[24..32], &40u64.to_be_bytes());
    assert_eq!(&out[32..36], &1u32.to_be_bytes()); // context
    assert_eq!(&out[36..40], &2u32.to_be_bytes()); // count
    assert_eq!(&out[40..48], &(6u64 << 30).to_be_bytes());
    assert_eq!(&out[48..56], &3u64.to_be_bytes());
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
    let to = ReplyTo {
        cookie: 0,
        offset: 0,
    };
    encode_error_chunk(&mut out, Framing::Extended, to, Errno::EIO, &msg);
    let len = u16::from_be_bytes([out[36], out[37]]) as usize;
    assert!(len <= MAX_STRING);
    assert!(std::str::from_utf8(&out[38..38 + len]).is_ok());
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
        if data.len() >= EXTENDED_REQUEST_LEN {
            let mut h = [0u8; EXTENDED_REQUEST_LEN];
            h.copy_from_slice(&data[..EXTENDED_REQUEST_LEN]);
            let _ = Request::decode_extended(&h);
        }
        let _ = BlockStatusFilter::decode(&data);
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
