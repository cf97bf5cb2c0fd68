//! Reading and writing NumPy `.npy` files (format versions 1, 2 and 3), with one-line
//! errors for everything malformed. Element types: `<f2`, `<f4`, `<f8`, and for bf16 `<u2`
//! bit patterns or the 2-byte void `<V2` that `ml_dtypes.bfloat16` arrays are saved as;
//! big-endian variants are read too.

use crate::error::{Error, Result};
use std::io::Read;
use std::path::Path;

/// The Python that the benchmarks' rivals (numpy, scipy) run in, reading and writing these
/// files: `$NORMORACLE_PYTHON`, else `python3`. One interpreter for every rival of a run.
pub fn python() -> String {
    std::env::var("NORMORACLE_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

/// The element data of an array, in the file's own type.
#[derive(Debug, Clone, PartialEq)]
pub enum NpyData {
    /// IEEE binary16 bit patterns (`<f2`).
    F16(Vec<u16>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    /// Raw 16-bit patterns (`<u2`), the convention for bf16.
    U16(Vec<u16>),
    /// 2-byte void elements (`<V2`, `|V2`): what `np.save` writes for an array of
    /// `ml_dtypes.bfloat16` (numpy has no descr for it); read as bf16 bit patterns.
    V2(Vec<u16>),
}

impl NpyData {
    pub fn len(&self) -> usize {
        match self {
            NpyData::F16(v) | NpyData::U16(v) | NpyData::V2(v) => v.len(),
            NpyData::F32(v) => v.len(),
            NpyData::F64(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The numpy `descr` string this data is written with.
    pub fn descr(&self) -> &'static str {
        match self {
            NpyData::F16(_) => "<f2",
            NpyData::F32(_) => "<f4",
            NpyData::F64(_) => "<f8",
            NpyData::U16(_) => "<u2",
            NpyData::V2(_) => "<V2",
        }
    }
}

/// An array read from or to be written to a `.npy` file (C order).
#[derive(Debug, Clone, PartialEq)]
pub struct NpyArray {
    pub shape: Vec<usize>,
    pub data: NpyData,
}

impl NpyArray {
    pub fn new(shape: Vec<usize>, data: NpyData) -> Result<Self> {
        if element_count(&shape) != Some(data.len()) {
            return Err(Error::input(format!(
                "shape {shape:?} does not hold the {} elements given",
                data.len()
            )));
        }
        Ok(NpyArray { shape, data })
    }

    /// Rows × width view: the last axis is the row width, leading axes are rows.
    /// A 1-D array is one row; a 0-D array is an error.
    pub fn rows_and_width(&self) -> Result<(usize, usize)> {
        match self.shape.split_last() {
            None => Err(Error::input("a 0-dimensional array has no rows")),
            Some((&d, lead)) => element_count(lead)
                .map(|rows| (rows, d))
                .ok_or_else(|| Error::input(format!("shape {:?} is too large", self.shape))),
        }
    }

    /// Every element widened to f64 (exact for f16/f32/f64). `U16` and `V2` patterns are
    /// taken as bf16, whose values are exact in f64 too.
    pub fn to_f64(&self) -> Vec<f64> {
        match &self.data {
            NpyData::F16(v) => v
                .iter()
                .map(|&b| half::f16::from_bits(b).to_f64())
                .collect(),
            NpyData::U16(v) | NpyData::V2(v) => v
                .iter()
                .map(|&b| half::bf16::from_bits(b).to_f64())
                .collect(),
            NpyData::F32(v) => v.iter().map(|&x| x as f64).collect(),
            NpyData::F64(v) => v.clone(),
        }
    }
}

const MAGIC: &[u8] = b"\x93NUMPY";

/// The longest header read. numpy writes a few hundred bytes (and `np.load` refuses more
/// than 10 000 by default); the cap keeps a corrupt length field from asking for gigabytes.
pub const MAX_HEADER_LEN: usize = 1 << 20;

/// What a header declares: the element type and the shape.
struct Header {
    shape: Vec<usize>,
    descr: String,
    little: bool,
    /// `f2`, `u2`, `V2`, `f4` or `f8`.
    kind: &'static str,
    /// Bytes per element.
    width: usize,
    /// Bytes of data the shape and element type call for.
    data_len: usize,
}

/// Reads a `.npy` file: the header, then exactly the bytes it declares. A regular file's
/// length is checked against the declaration before any allocation; a stream (a pipe,
/// /dev/zero) is read no further than the declaration and one byte past it.
pub fn read(path: &Path) -> Result<NpyArray> {
    let with_path = |e: Error| match e {
        Error::Input(m) => Error::input(format!("{}: {m}", path.display())),
        Error::Io(m) => Error::io(format!("cannot read {}: {m}", path.display())),
        other => other,
    };
    let file = std::fs::File::open(path)
        .map_err(|e| Error::io(format!("cannot read {}: {e}", path.display())))?;
    let metadata = file
        .metadata()
        .map_err(|e| Error::io(format!("cannot read {}: {e}", path.display())))?;
    if metadata.is_dir() {
        return Err(Error::io(format!("{} is a directory", path.display())));
    }
    let len = metadata.is_file().then_some(metadata.len());
    read_from(&mut std::io::BufReader::new(file), len).map_err(with_path)
}

/// Parses the bytes of a `.npy` file.
pub fn parse(bytes: &[u8]) -> Result<NpyArray> {
    let mut reader = bytes;
    read_from(&mut reader, Some(bytes.len() as u64))
}

/// Reads a `.npy` array from `reader`, which holds `len` bytes in all when known.
fn read_from(reader: &mut impl Read, len: Option<u64>) -> Result<NpyArray> {
    let (header, header_end) = read_header(reader)?;
    let data_len = header.data_len;
    let declared = || {
        format!(
            "shape {:?} of '{}' needs {data_len} bytes",
            header.shape, header.descr
        )
    };
    if let Some(len) = len {
        let available = len.saturating_sub(header_end);
        if available != data_len as u64 {
            return Err(Error::input(format!(
                "data holds {available} bytes but {}",
                declared()
            )));
        }
    }
    // A file's length was checked above: allocate once. A stream's grows as it arrives.
    let mut body = Vec::with_capacity(if len.is_some() { data_len } else { 0 });
    reader
        .take(data_len as u64)
        .read_to_end(&mut body)
        .map_err(Error::from)?;
    if body.len() != data_len {
        return Err(Error::input(format!(
            "data holds {} bytes but {}",
            body.len(),
            declared()
        )));
    }
    if len.is_none() {
        let mut extra = [0u8; 1];
        if reader.read(&mut extra).map_err(Error::from)? != 0 {
            return Err(Error::input(format!(
                "data holds more bytes than {}",
                declared()
            )));
        }
    }
    Ok(NpyArray {
        data: decode(&header, &body),
        shape: header.shape,
    })
}

/// Reads the magic string, version, header length and header; returns the header and the
/// offset of the data.
fn read_header(reader: &mut impl Read) -> Result<(Header, u64)> {
    let truncated = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => Error::input("truncated .npy header"),
        _ => Error::from(e),
    };
    let mut preamble = [0u8; 8];
    reader
        .read_exact(&mut preamble)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => Error::input("not a .npy file (bad magic)"),
            _ => Error::from(e),
        })?;
    if &preamble[..6] != MAGIC {
        return Err(Error::input("not a .npy file (bad magic)"));
    }
    let (header_len, start) = match preamble[6] {
        1 => {
            let mut n = [0u8; 2];
            reader.read_exact(&mut n).map_err(truncated)?;
            (u16::from_le_bytes(n) as usize, 10u64)
        }
        2 | 3 => {
            let mut n = [0u8; 4];
            reader.read_exact(&mut n).map_err(truncated)?;
            (u32::from_le_bytes(n) as usize, 12)
        }
        v => return Err(Error::input(format!("unsupported .npy version {v}"))),
    };
    if header_len > MAX_HEADER_LEN {
        return Err(Error::input(format!(
            "the .npy header declares {header_len} bytes (at most {MAX_HEADER_LEN})"
        )));
    }
    let mut text = vec![0u8; header_len];
    reader.read_exact(&mut text).map_err(truncated)?;
    let text =
        std::str::from_utf8(&text).map_err(|_| Error::input("the .npy header is not text"))?;
    Ok((parse_header(text)?, start + header_len as u64))
}

/// The header dictionary: descr, fortran_order and shape, checked.
fn parse_header(header: &str) -> Result<Header> {
    let descr = dict_value(header, "descr")?;
    let descr = descr.trim_matches(|c| c == '\'' || c == '"').to_string();
    let fortran = dict_value(header, "fortran_order")?;
    if fortran.trim() != "False" {
        return Err(Error::input(
            "fortran_order arrays are not supported; save with C order",
        ));
    }
    let shape = parse_shape(&dict_value(header, "shape")?)?;
    let (little, kind) = match descr.as_bytes().first() {
        Some(b'<') | Some(b'|') | Some(b'=') => (true, &descr[1..]),
        Some(b'>') => (false, &descr[1..]),
        _ => return Err(Error::input(format!("unsupported dtype '{descr}'"))),
    };
    let (kind, width) = match kind {
        "f2" => ("f2", 2),
        "u2" => ("u2", 2),
        "V2" => ("V2", 2),
        "f4" => ("f4", 4),
        "f8" => ("f8", 8),
        _ => {
            return Err(Error::input(format!(
                "unsupported dtype '{descr}' (use <f2, <f4, <f8, or for bf16 <u2 bits or ml_dtypes' <V2)"
            )))
        }
    };
    let data_len = element_count(&shape)
        .and_then(|count| count.checked_mul(width))
        .filter(|&n| isize::try_from(n).is_ok())
        .ok_or_else(|| Error::input(format!("shape {shape:?} is too large to hold")))?;
    Ok(Header {
        shape,
        descr,
        little,
        kind,
        width,
        data_len,
    })
}

/// The number of elements of a shape, None when it overflows.
pub fn element_count(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |acc, &n| acc.checked_mul(n))
}

/// The elements of `body`, whose length the header's shape and element type call for.
fn decode(header: &Header, body: &[u8]) -> NpyData {
    macro_rules! decode_as {
        ($t:ty, $n:expr) => {
            body.chunks_exact($n)
                .map(|chunk| {
                    let mut a = [0u8; $n];
                    a.copy_from_slice(chunk);
                    if header.little {
                        <$t>::from_le_bytes(a)
                    } else {
                        <$t>::from_be_bytes(a)
                    }
                })
                .collect::<Vec<$t>>()
        };
    }
    debug_assert_eq!(body.len() % header.width, 0);
    match header.kind {
        "f2" => NpyData::F16(decode_as!(u16, 2)),
        "u2" => NpyData::U16(decode_as!(u16, 2)),
        "V2" => NpyData::V2(decode_as!(u16, 2)),
        "f4" => NpyData::F32(decode_as!(f32, 4)),
        _ => NpyData::F64(decode_as!(f64, 8)),
    }
}

/// The text after `'key':` up to the next top-level comma or closing brace.
fn dict_value(header: &str, key: &str) -> Result<String> {
    let pat_single = format!("'{key}'");
    let pat_double = format!("\"{key}\"");
    let pos = header
        .find(&pat_single)
        .map(|p| p + pat_single.len())
        .or_else(|| header.find(&pat_double).map(|p| p + pat_double.len()))
        .ok_or_else(|| Error::input(format!("the .npy header has no '{key}'")))?;
    let rest = header[pos..].trim_start();
    let rest = rest
        .strip_prefix(':')
        .ok_or_else(|| Error::input(format!("malformed '{key}' in the .npy header")))?;
    let mut depth = 0i32;
    for (i, c) in rest.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' | '}' if depth == 0 => return Ok(rest[..i].trim().to_string()),
            _ => {}
        }
    }
    Err(Error::input(format!(
        "malformed '{key}' in the .npy header"
    )))
}

fn parse_shape(text: &str) -> Result<Vec<usize>> {
    let inner = text
        .trim()
        .strip_prefix('(')
        .and_then(|t| t.strip_suffix(')'))
        .ok_or_else(|| Error::input(format!("malformed shape '{text}'")))?;
    inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.trim_end_matches('L')
                .parse::<usize>()
                .map_err(|_| Error::input(format!("malformed shape '{text}'")))
        })
        .collect()
}

/// Serializes an array as a version-1 `.npy` file.
pub fn to_bytes(array: &NpyArray) -> Vec<u8> {
    let shape = match array.shape.len() {
        1 => format!("({},)", array.shape[0]),
        _ => format!(
            "({})",
            array
                .shape
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}",
        array.data.descr()
    );
    // Pad so the data starts on a 64-byte boundary, as numpy does.
    let unpadded = MAGIC.len() + 4 + header.len() + 1;
    header.push_str(&" ".repeat((64 - unpadded % 64) % 64));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + array.data.len() * 8);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    match &array.data {
        NpyData::F16(v) | NpyData::U16(v) | NpyData::V2(v) => {
            v.iter().for_each(|x| out.extend(x.to_le_bytes()))
        }
        NpyData::F32(v) => v.iter().for_each(|x| out.extend(x.to_le_bytes())),
        NpyData::F64(v) => v.iter().for_each(|x| out.extend(x.to_le_bytes())),
    }
    out
}

/// Writes an array as a `.npy` file.
pub fn write(path: &Path, array: &NpyArray) -> Result<()> {
    std::fs::write(path, to_bytes(array))
        .map_err(|e| Error::io(format!("cannot write {}: {e}", path.display())))
}

/// The array's elements as raw bits of `dtype`; the file's element type must be the one
/// that dtype is stored as (`<f2` f16, `<u2` or ml_dtypes' `<V2` bf16, `<f4` f32, `<f8` f64).
pub fn bits_of(array: &NpyArray, dtype: crate::Dtype, what: &str) -> Result<Vec<u64>> {
    use crate::Dtype;
    match (&array.data, dtype) {
        (NpyData::F16(v), Dtype::F16)
        | (NpyData::U16(v), Dtype::BF16)
        | (NpyData::V2(v), Dtype::BF16) => Ok(v.iter().map(|&b| b as u64).collect()),
        (NpyData::F32(v), Dtype::F32) => Ok(v.iter().map(|x| x.to_bits() as u64).collect()),
        (NpyData::F64(v), Dtype::F64) => Ok(v.iter().map(|x| x.to_bits()).collect()),
        (data, dt) => Err(Error::input(format!(
            "{what} holds '{}' but --dtype {dt} needs '{}'",
            data.descr(),
            storage_descr(dt)
        ))),
    }
}

/// The `.npy` element type a dtype is stored as.
pub fn storage_descr(dtype: crate::Dtype) -> &'static str {
    match dtype {
        crate::Dtype::F16 => "<f2",
        crate::Dtype::BF16 => "<u2",
        crate::Dtype::F32 => "<f4",
        crate::Dtype::F64 => "<f8",
    }
}

/// An array of `dtype` values from raw bits.
pub fn from_bits(shape: Vec<usize>, dtype: crate::Dtype, bits: &[u64]) -> Result<NpyArray> {
    use crate::Dtype;
    let data = match dtype {
        Dtype::F16 => NpyData::F16(bits.iter().map(|&b| b as u16).collect()),
        Dtype::BF16 => NpyData::U16(bits.iter().map(|&b| b as u16).collect()),
        Dtype::F32 => NpyData::F32(bits.iter().map(|&b| f32::from_bits(b as u32)).collect()),
        Dtype::F64 => NpyData::F64(bits.iter().map(|&b| f64::from_bits(b)).collect()),
    };
    NpyArray::new(shape, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_every_dtype() {
        for data in [
            NpyData::F16(vec![0x3c00, 0x8000, 0x7c00]),
            NpyData::U16(vec![0x3f80, 1, 2]),
            NpyData::V2(vec![0x3f80, 0xc020, 0x7f80]),
            NpyData::F32(vec![1.5, -0.0, f32::MIN_POSITIVE]),
            NpyData::F64(vec![1e300, -2.0, 5e-324]),
        ] {
            let a = NpyArray::new(vec![1, 3], data).unwrap();
            assert_eq!(parse(&to_bytes(&a)).unwrap(), a);
        }
    }

    /// What `np.save` writes for `np.array([1.0, -2.5], dtype=ml_dtypes.bfloat16)`, byte for
    /// byte: descr '<V2', the bf16 patterns in little-endian order.
    #[test]
    fn ml_dtypes_bfloat16_files_read_as_bf16_and_only_as_bf16() {
        let header = "{'descr': '<V2', 'fortran_order': False, 'shape': (2,), }";
        let mut bytes = MAGIC.to_vec();
        bytes.extend([1, 0]);
        bytes.extend((header.len() as u16).to_le_bytes());
        bytes.extend(header.as_bytes());
        bytes.extend([0x80, 0x3f, 0x20, 0xc0]);
        let a = parse(&bytes).unwrap();
        assert_eq!(a.to_f64(), [1.0, -2.5]);
        assert_eq!(
            bits_of(&a, crate::Dtype::BF16, "x").unwrap(),
            [0x3f80, 0xc020]
        );
        let err = bits_of(&a, crate::Dtype::F16, "x").unwrap_err().to_string();
        assert!(
            err.contains("x holds '<V2' but --dtype f16 needs '<f2'"),
            "{err}"
        );
        let void4 = String::from_utf8_lossy(&bytes).replace("<V2", "<V4");
        assert!(parse(void4.as_bytes()).is_err());
    }

    #[test]
    fn header_is_aligned() {
        let a = NpyArray::new(vec![2, 2], NpyData::F32(vec![0.0; 4])).unwrap();
        let b = to_bytes(&a);
        assert_eq!((b.len() - 16) % 64, 0);
    }

    #[test]
    fn malformed_inputs_are_errors_not_panics() {
        let good = to_bytes(&NpyArray::new(vec![3], NpyData::F32(vec![1.0; 3])).unwrap());
        assert!(parse(b"").is_err());
        assert!(parse(b"\x93NUMPY").is_err());
        assert!(parse(&good[..good.len() - 1]).is_err());
        for cut in 0..good.len() {
            let _ = parse(&good[..cut]);
        }
        let text = String::from_utf8_lossy(&good).replace("<f4", "<i4");
        assert!(parse(text.as_bytes()).is_err());
    }

    #[test]
    fn declared_sizes_are_checked_before_reading_the_data() {
        let with_shape = |shape: &str, body: &[u8]| {
            let header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
            let mut bytes = MAGIC.to_vec();
            bytes.extend([1, 0]);
            bytes.extend((header.len() as u16).to_le_bytes());
            bytes.extend(header.as_bytes());
            bytes.extend_from_slice(body);
            bytes
        };
        assert!(parse(&with_shape("(2,)", &[0; 8])).is_ok());
        let err = |shape: &str, body: &[u8]| parse(&with_shape(shape, body)).unwrap_err();
        assert!(err("(1099511627776,)", &[])
            .to_string()
            .contains("needs 4398046511104"));
        assert!(err("(4294967296, 4294967296)", &[])
            .to_string()
            .contains("too large"));
        assert!(err("(2,)", &[0; 9])
            .to_string()
            .contains("data holds 9 bytes"));
        // A stream: the declared bytes, then one byte more is an error.
        let mut stream: &[u8] = &with_shape("(2,)", &[0; 9]);
        assert!(read_from(&mut stream, None).is_err());
        let mut stream: &[u8] = &with_shape("(2,)", &[0; 8]);
        assert_eq!(
            read_from(&mut stream, None).unwrap().data,
            NpyData::F32(vec![0.0; 2])
        );
    }
}
