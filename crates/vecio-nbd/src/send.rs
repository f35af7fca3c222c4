//! Sending replies on a non-blocking socket: replies wait in order in an outbox and go out
//! many at a time with one `writev(2)` (header and payload of each reply side by side, the
//! payload never copied). Payload buffers come back to the caller once they are sent.

use std::collections::VecDeque;
use std::io::{self, IoSlice, Write};

use vecio::AlignedBuf;

use crate::stream::Stream;

/// Replies gathered into one `writev` at most (two slices each).
const BATCH: usize = 32;

/// Longest reply header kept inline (an extended chunk header with its fixed fields).
const INLINE: usize = crate::proto::ReplyHead::MAX;

/// A reply header: small ones inline, long ones (error messages, extents) on the heap.
enum Head {
    Inline { bytes: [u8; INLINE], len: u8 },
    Heap(Vec<u8>),
}

impl Head {
    fn as_slice(&self) -> &[u8] {
        match self {
            Head::Inline { bytes, len } => &bytes[..*len as usize],
            Head::Heap(v) => v,
        }
    }
}

struct Out {
    head: Head,
    payload: Option<AlignedBuf>,
    sent: usize,
}

impl Out {
    fn len(&self) -> usize {
        self.head.as_slice().len() + self.payload.as_ref().map_or(0, |p| p.len())
    }
}

/// Replies waiting to be sent.
#[derive(Default)]
pub(crate) struct Outbox {
    queue: VecDeque<Out>,
    bytes: usize,
}

impl Outbox {
    /// True when nothing waits.
    pub(crate) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Bytes waiting.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Queues a reply of `head` followed by `payload`.
    pub(crate) fn push(&mut self, head: &[u8], payload: Option<AlignedBuf>) {
        let head = if head.len() <= INLINE {
            let mut bytes = [0u8; INLINE];
            bytes[..head.len()].copy_from_slice(head);
            Head::Inline {
                bytes,
                len: head.len() as u8,
            }
        } else {
            Head::Heap(head.to_vec())
        };
        let out = Out {
            head,
            payload,
            sent: 0,
        };
        self.bytes += out.len();
        self.queue.push_back(out);
    }

    /// Writes as much as the socket takes now. Sent payload buffers are appended to `done`.
    /// Returns true when everything was sent.
    pub(crate) fn send(
        &mut self,
        stream: &mut Stream,
        done: &mut Vec<AlignedBuf>,
    ) -> io::Result<bool> {
        while !self.queue.is_empty() {
            let n = {
                // On the stack: no allocation per send.
                let mut slices = [IoSlice::new(&[]); 2 * BATCH];
                let mut k = 0;
                for out in self.queue.iter().take(BATCH) {
                    let head = out.head.as_slice();
                    let mut skip = out.sent;
                    if skip < head.len() {
                        slices[k] = IoSlice::new(&head[skip..]);
                        k += 1;
                        skip = 0;
                    } else {
                        skip -= head.len();
                    }
                    if let Some(p) = &out.payload {
                        if skip < p.len() {
                            slices[k] = IoSlice::new(&p[skip..]);
                            k += 1;
                        }
                    }
                }
                match stream.write_vectored(&slices[..k]) {
                    Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                    Err(e) => return Err(e),
                }
            };
            self.advance(n, done);
        }
        stream.flush_tls()
    }

    fn advance(&mut self, mut n: usize, done: &mut Vec<AlignedBuf>) {
        self.bytes -= n;
        while n > 0 {
            let Some(front) = self.queue.front_mut() else {
                return;
            };
            let left = front.len() - front.sent;
            if n < left {
                front.sent += n;
                return;
            }
            n -= left;
            if let Some(out) = self.queue.pop_front() {
                done.extend(out.payload);
            }
        }
    }

    /// Drops every waiting reply, handing back the payload buffers.
    pub(crate) fn clear(&mut self, done: &mut Vec<AlignedBuf>) {
        for out in self.queue.drain(..) {
            done.extend(out.payload);
        }
        self.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::Sock;
    use std::io::Read;
    use std::os::unix::net::UnixStream;

    #[test]
    fn replies_go_out_in_order_with_payloads() {
        let (a, mut b) = UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        let mut s = Stream::from(Sock::Unix(a));
        let mut out = Outbox::default();
        let mut p = AlignedBuf::page_aligned(5000);
        p.fill(7);
        out.push(b"head1", Some(p));
        out.push(&[9u8; 40], None);
        assert_eq!(out.bytes(), 5 + 5000 + 40);
        let mut done = Vec::new();
        assert!(out.send(&mut s, &mut done).unwrap());
        assert_eq!(done.len(), 1);
        assert!(out.is_empty());
        let mut got = vec![0u8; 5045];
        b.read_exact(&mut got).unwrap();
        assert_eq!(&got[..5], b"head1");
        assert!(got[5..5005].iter().all(|&x| x == 7));
        assert!(got[5005..].iter().all(|&x| x == 9));
    }

    #[test]
    fn a_full_socket_keeps_the_rest_for_later() {
        let (a, mut b) = UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        let mut s = Stream::from(Sock::Unix(a));
        let mut out = Outbox::default();
        let total = 8 << 20;
        let mut p = AlignedBuf::page_aligned(total);
        for (i, x) in p.iter_mut().enumerate() {
            *x = (i % 251) as u8;
        }
        out.push(b"h", Some(p));
        let mut done = Vec::new();
        assert!(!out.send(&mut s, &mut done).unwrap());
        let reader = std::thread::spawn(move || {
            let mut got = vec![0u8; total + 1];
            b.read_exact(&mut got).unwrap();
            got
        });
        while !out.send(&mut s, &mut done).unwrap() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let got = reader.join().unwrap();
        assert_eq!(got[0], b'h');
        assert!(got[1..]
            .iter()
            .enumerate()
            .all(|(i, &x)| x == (i % 251) as u8));
        assert_eq!(done.len(), 1);
    }
}
