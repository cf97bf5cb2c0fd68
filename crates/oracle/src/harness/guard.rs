//! Buffers between guard pages, with poisoned slack on either side of the elements.
//!
//! ```text
//! | guard page | poison ≥ 64 B | elements (first one 64-byte aligned) | poison < 64 B | guard page |
//! ```
//!
//! A write just past the last element lands in the poison (seen after the call) or, when the
//! elements end on a page boundary, in the guard page (a crash the signal handler places); a
//! write just before the first element lands in the poison; farther writes either way hit a
//! guard page. Inputs are made read-only after they are filled, so a write into them is a
//! crash placed in that input. The first element is aligned to 64 bytes as an allocator's
//! would be, so kernels that (wrongly, but commonly) assume aligned buffers behave as they do
//! elsewhere; reads within the slack are not seen (a SIMD tail's over-read of the last cache
//! line is harmless, and so is not reported).

use super::protocol::Spots;
use std::io;

/// The byte the slack is filled with.
pub const POISON_BYTE: u8 = 0xa5;
/// The first element's alignment, and the least slack before it.
const ALIGN: usize = 64;
/// How much of the slack before the first element is poisoned and checked (a reused mapping
/// keeps other bytes farther down; writes there go unseen, writes past the mapping crash).
const BEFORE_WINDOW: usize = 4096;

fn page_size() -> usize {
    // SAFETY: sysconf has no memory effects.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if page > 0 {
        page as usize
    } else {
        4096
    }
}

fn round_up(n: usize, to: usize) -> Option<usize> {
    n.checked_add(to - 1).map(|v| v / to * to)
}

/// One mapping: guard page, area (slack and elements), guard page.
pub struct Guarded {
    base: *mut u8,
    total: usize,
    page: usize,
    /// Offset of the first element from `base`, and the elements' length in bytes.
    start: usize,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone.
unsafe impl Send for Guarded {}

/// The addresses the signal handler compares a fault with.
#[derive(Debug, Clone, Copy, Default)]
pub struct Bounds {
    /// Start of the lower guard page.
    pub low: usize,
    /// First element.
    pub start: usize,
    /// One past the last element.
    pub end: usize,
    /// End of the upper guard page.
    pub high: usize,
}

impl Guarded {
    /// A zeroed buffer of `len` bytes with its slack poisoned.
    pub fn new(len: usize) -> io::Result<Self> {
        let page = page_size();
        let too_large = || io::Error::new(io::ErrorKind::InvalidInput, "buffer too large");
        let elements = round_up(len.max(1), ALIGN).ok_or_else(too_large)?;
        let area = round_up(elements.checked_add(ALIGN).ok_or_else(too_large)?, page)
            .ok_or_else(too_large)?;
        let total = area.checked_add(2 * page).ok_or_else(too_large)?;
        // SAFETY: a fresh private anonymous mapping; checked for failure below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                total,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = base as *mut u8;
        let buffer = Guarded {
            base,
            total,
            page,
            start: page + area - elements,
            len,
        };
        // SAFETY: both guard pages lie inside the mapping.
        unsafe {
            if libc::mprotect(base as *mut _, page, libc::PROT_NONE) != 0
                || libc::mprotect(base.add(page + area) as *mut _, page, libc::PROT_NONE) != 0
            {
                return Err(io::Error::last_os_error());
            }
        }
        let mut buffer = buffer;
        buffer.area_mut().fill(POISON_BYTE);
        buffer.bytes_mut().fill(0);
        Ok(buffer)
    }

    fn area_len(&self) -> usize {
        self.total - 2 * self.page
    }

    /// The slack and the elements: every byte between the guard pages.
    fn area(&self) -> &[u8] {
        // SAFETY: the area is mapped readable for the life of `self`.
        unsafe { std::slice::from_raw_parts(self.base.add(self.page), self.area_len()) }
    }

    fn area_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `area`; writable until `protect_read_only`.
        unsafe { std::slice::from_raw_parts_mut(self.base.add(self.page), self.area_len()) }
    }

    /// Whether `len` bytes of elements fit this mapping (with their slack).
    pub fn fits(&self, len: usize) -> bool {
        round_up(len.max(1), ALIGN).is_some_and(|e| e.saturating_add(ALIGN) <= self.area_len())
    }

    /// Lays out `len` bytes of elements anew in this mapping (which they must fit): writable,
    /// zeroed, the slack next to them poisoned. Reusing a mapping spares the page faults and
    /// address-space changes of a fresh one on every call.
    pub fn relayout(&mut self, len: usize) -> io::Result<()> {
        let elements = round_up(len.max(1), ALIGN).expect("fits");
        // SAFETY: the area is page-aligned and inside the mapping.
        let rc = unsafe {
            libc::mprotect(
                self.base.add(self.page) as *mut _,
                self.area_len(),
                libc::PROT_READ | libc::PROT_WRITE,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        self.start = self.page + self.area_len() - elements;
        self.len = len;
        let first = self.start - self.page;
        let window = first.min(BEFORE_WINDOW);
        let area = self.area_mut();
        area[first - window..first].fill(POISON_BYTE);
        area[first..first + len].fill(0);
        area[first + len..].fill(POISON_BYTE);
        Ok(())
    }

    pub fn bytes(&self) -> &[u8] {
        &self.area()[self.start - self.page..][..self.len]
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        let (start, len) = (self.start - self.page, self.len);
        &mut self.area_mut()[start..][..len]
    }

    pub fn ptr(&self) -> *const u8 {
        // SAFETY: within the mapping.
        unsafe { self.base.add(self.start) }
    }

    pub fn mut_ptr(&mut self) -> *mut u8 {
        // SAFETY: within the mapping.
        unsafe { self.base.add(self.start) }
    }

    /// Makes the area read-only (inputs, once filled).
    pub fn protect_read_only(&self) -> io::Result<()> {
        // SAFETY: the area is page-aligned and inside the mapping.
        let rc = unsafe {
            libc::mprotect(
                self.base.add(self.page) as *mut _,
                self.area_len(),
                libc::PROT_READ,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    pub fn bounds(&self) -> Bounds {
        let base = self.base as usize;
        Bounds {
            low: base,
            start: base + self.start,
            end: base + self.start + self.len,
            high: base + self.total,
        }
    }

    /// Elements (of `width` bytes) whose slack bytes before the first element and after the
    /// last one are no longer poison: the kernel wrote there.
    pub fn slack_damage(&self, width: usize) -> (Spots, Spots) {
        let area = self.area();
        let first = self.start - self.page;
        let end = first + self.len;
        let window = first.min(BEFORE_WINDOW);
        let before = damage(
            &area[first - window..first],
            |k| (k as i64 - window as i64).div_euclid(width as i64),
            i64::max,
        );
        let after = damage(&area[end..], |k| ((self.len + k) / width) as i64, i64::min);
        (before, after)
    }
}

/// Counts the distinct elements (by `element_of` a byte offset) whose bytes left the poison;
/// `first` is the one nearest the buffer's elements (`nearer` picks it from two).
fn damage(slack: &[u8], element_of: impl Fn(usize) -> i64, nearer: fn(i64, i64) -> i64) -> Spots {
    let mut spots = Spots::default();
    let mut last = None;
    for (k, _) in slack.iter().enumerate().filter(|(_, &b)| b != POISON_BYTE) {
        let e = element_of(k);
        if last != Some(e) {
            spots.first = if spots.count == 0 {
                e
            } else {
                nearer(spots.first, e)
            };
            spots.count += 1;
            last = Some(e);
        }
    }
    spots
}

impl Drop for Guarded {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`.
        unsafe { libc::munmap(self.base as *mut _, self.total) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_are_aligned_zeroed_and_framed_by_poison() {
        for len in [1, 4, 60, 64, 100, 4096, 4097 * 4] {
            let mut g = Guarded::new(len).unwrap();
            assert_eq!(g.ptr() as usize % ALIGN, 0);
            assert!(g.bytes().iter().all(|&b| b == 0));
            let b = g.bounds();
            assert_eq!(b.end - b.start, len);
            assert!(b.start - b.low >= page_size() + ALIGN);
            assert!(b.high - b.end >= page_size());
            assert_eq!(b.high - b.end - page_size(), (ALIGN - len % ALIGN) % ALIGN);
            assert_eq!(g.slack_damage(4), (Spots::default(), Spots::default()));
            g.bytes_mut().fill(7);
            assert_eq!(g.slack_damage(4), (Spots::default(), Spots::default()));
        }
    }

    /// A mapping reused for shorter and longer elements is laid out as a fresh one would be:
    /// aligned, zeroed, poisoned around, and a write beside the elements is seen.
    #[test]
    fn a_reused_mapping_is_laid_out_like_a_fresh_one() {
        let mut g = Guarded::new(10_000).unwrap();
        g.bytes_mut().fill(7);
        g.protect_read_only().unwrap();
        for len in [4, 40, 10_000, 64, 9_000] {
            assert!(g.fits(len));
            g.relayout(len).unwrap();
            assert_eq!(g.ptr() as usize % ALIGN, 0);
            assert_eq!(g.bytes().len(), len);
            assert!(g.bytes().iter().all(|&b| b == 0));
            assert_eq!(g.slack_damage(4), (Spots::default(), Spots::default()));
            let p = g.mut_ptr();
            // SAFETY: just before the elements, in the poisoned window.
            unsafe { p.sub(4).write(0) };
            assert_eq!(
                g.slack_damage(4).0,
                Spots {
                    count: 1,
                    first: -1
                }
            );
        }
        assert!(!g.fits(20_000));
    }

    #[test]
    fn writes_into_the_slack_are_placed_by_element() {
        // 10 f32 = 40 bytes: 24 bytes of slack after, ≥ 64 before.
        let mut g = Guarded::new(40).unwrap();
        let p = g.mut_ptr();
        // SAFETY: within the poisoned slack of the mapping.
        unsafe {
            p.add(40).write(0); // element 10, the first past the end
            p.add(47).write(0); // element 11
            p.sub(1).write(0); // element −1
            p.sub(9).write(0); // element −3
        }
        let (before, after) = g.slack_damage(4);
        assert_eq!(
            before,
            Spots {
                count: 2,
                first: -1
            }
        );
        assert_eq!(
            after,
            Spots {
                count: 2,
                first: 10
            }
        );
    }
}
