//! Record batches built from fuzzer bytes, so that the Arrow harness reaches the conversion
//! of every Arrow type into every column type instead of stopping at a stream decoder: each
//! byte read picks a choice (a column's name, its type, nullability, the row count) or is
//! value data. Bytes past the end read as zeros; every array is built through Arrow's
//! checked constructors, and a batch Arrow refuses is left out.

use std::sync::Arc;

use arrow_array::types::{
    ArrowPrimitiveType, Date32Type, Date64Type, Decimal128Type, Decimal256Type, Decimal32Type,
    Decimal64Type, DecimalType, Float16Type, Float32Type, Float64Type, Int16Type, Int32Type,
    Int64Type, Int8Type, Time64MicrosecondType, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BinaryViewArray, BooleanArray, DictionaryArray,
    FixedSizeBinaryArray, LargeBinaryArray, LargeStringArray, ListArray, NullArray, PrimitiveArray,
    RecordBatch, StringArray, StringViewArray,
};
use arrow_buffer::{BooleanBuffer, MutableBuffer, NullBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema};

/// Column names: the fuzz table's (in either case), one it lacks, and names that need
/// quoting in SQL.
const NAMES: &[&str] = &[
    "a", "b", "c", "d", "e", "g", "h", "i", "j", "k", "A", "K", "zz", "", "we\"ird", "a b",
];

/// Time zones a timestamp column may carry, valid or not.
const ZONES: &[&str] = &["+00:00", "-09:30", "UTC", "Europe/Paris", "bogus", "+99:99"];

/// A cursor over the fuzzer's bytes.
struct Src<'a>(&'a [u8]);

impl Src<'_> {
    fn byte(&mut self) -> u8 {
        let (b, rest) = self.0.split_first().map_or((0, &[][..]), |(b, r)| (*b, r));
        self.0 = rest;
        b
    }
    fn pick(&mut self, n: usize) -> usize {
        usize::from(self.byte()) % n.max(1)
    }
    fn take(&mut self, n: usize) -> &[u8] {
        let (a, b) = self.0.split_at(n.min(self.0.len()));
        self.0 = b;
        a
    }
}

/// Up to 3 batches, each of up to 6 columns and 8 rows.
pub fn batches(bytes: &[u8]) -> Vec<RecordBatch> {
    let mut src = Src(bytes.get(1..).unwrap_or_default());
    let count = 1 + src.pick(3);
    (0..count).filter_map(|_| batch(&mut src)).collect()
}

fn batch(src: &mut Src<'_>) -> Option<RecordBatch> {
    let columns = src.pick(7);
    let rows = src.pick(9);
    let mut fields = Vec::new();
    let mut arrays = Vec::new();
    for _ in 0..columns {
        let name = NAMES[src.pick(NAMES.len())];
        let nullable = src.byte() & 1 == 1;
        let nulls = nullable.then(|| null_buffer(src, rows));
        let array = array(src, rows, nulls)?;
        fields.push(Field::new(name, array.data_type().clone(), nullable));
        arrays.push(array);
    }
    let schema = Arc::new(Schema::new(fields));
    if arrays.is_empty() {
        return RecordBatch::try_new_with_options(
            schema,
            arrays,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(rows)),
        )
        .ok();
    }
    RecordBatch::try_new(schema, arrays).ok()
}

fn null_buffer(src: &mut Src<'_>, rows: usize) -> NullBuffer {
    let bits = src.byte();
    NullBuffer::from(
        (0..rows)
            .map(|i| bits >> (i % 8) & 1 == 1)
            .collect::<Vec<_>>(),
    )
}

/// `rows` values of a primitive type, straight from the bytes.
fn values<T: ArrowPrimitiveType>(src: &mut Src<'_>, rows: usize) -> ScalarBuffer<T::Native> {
    let size = std::mem::size_of::<T::Native>();
    let mut buf = MutableBuffer::from_len_zeroed(rows * size);
    let data = src.take(rows * size);
    buf.as_slice_mut()[..data.len()].copy_from_slice(data);
    ScalarBuffer::new(buf.into(), 0, rows)
}

fn prim<T: ArrowPrimitiveType>(
    src: &mut Src<'_>,
    rows: usize,
    nulls: Option<NullBuffer>,
) -> PrimitiveArray<T> {
    PrimitiveArray::new(values::<T>(src, rows), nulls)
}

/// A decimal array of the precision and scale the next two bytes give (`None` where Arrow
/// refuses them).
fn decimal<T: DecimalType>(
    src: &mut Src<'_>,
    rows: usize,
    nulls: Option<NullBuffer>,
) -> Option<ArrayRef> {
    let (precision, scale) = (src.byte(), src.byte() as i8);
    let a = prim::<T>(src, rows, nulls).with_precision_and_scale(precision, scale);
    Some(Arc::new(a.ok()?))
}

/// Short byte strings (0..8 bytes each).
fn strings<'a>(src: &mut Src<'a>, rows: usize) -> Vec<&'a [u8]> {
    (0..rows)
        .map(|_| {
            let n = src.pick(8);
            let (a, b) = src.0.split_at(n.min(src.0.len()));
            src.0 = b;
            a
        })
        .collect()
}

fn texts(src: &mut Src<'_>, rows: usize, nulls: &Option<NullBuffer>) -> Vec<Option<String>> {
    strings(src, rows)
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            let valid = nulls.as_ref().is_none_or(|n| n.is_valid(i));
            valid.then(|| String::from_utf8_lossy(s).into_owned())
        })
        .collect()
}

fn blobs<'a>(src: &mut Src<'a>, rows: usize, nulls: &Option<NullBuffer>) -> Vec<Option<&'a [u8]>> {
    strings(src, rows)
        .into_iter()
        .enumerate()
        .map(|(i, s)| nulls.as_ref().is_none_or(|n| n.is_valid(i)).then_some(s))
        .collect()
}

/// One array of the type the next byte picks.
fn array(src: &mut Src<'_>, rows: usize, nulls: Option<NullBuffer>) -> Option<ArrayRef> {
    let a: ArrayRef = match src.pick(31) {
        0 => Arc::new(NullArray::new(rows)),
        1 => {
            let bits = src.byte();
            let values = BooleanBuffer::from_iter((0..rows).map(|i| bits >> (i % 8) & 1 == 1));
            Arc::new(BooleanArray::new(values, nulls))
        }
        2 => Arc::new(prim::<Int8Type>(src, rows, nulls)),
        3 => Arc::new(prim::<Int16Type>(src, rows, nulls)),
        4 => Arc::new(prim::<Int32Type>(src, rows, nulls)),
        5 => Arc::new(prim::<Int64Type>(src, rows, nulls)),
        6 => Arc::new(prim::<UInt8Type>(src, rows, nulls)),
        7 => Arc::new(prim::<UInt16Type>(src, rows, nulls)),
        8 => Arc::new(prim::<UInt32Type>(src, rows, nulls)),
        9 => Arc::new(prim::<UInt64Type>(src, rows, nulls)),
        10 => Arc::new(prim::<Float16Type>(src, rows, nulls)),
        11 => Arc::new(prim::<Float32Type>(src, rows, nulls)),
        12 => Arc::new(prim::<Float64Type>(src, rows, nulls)),
        13 => decimal::<Decimal32Type>(src, rows, nulls)?,
        14 => decimal::<Decimal64Type>(src, rows, nulls)?,
        15 => decimal::<Decimal128Type>(src, rows, nulls)?,
        16 => decimal::<Decimal256Type>(src, rows, nulls)?,
        17 => Arc::new(StringArray::from(texts(src, rows, &nulls))),
        18 => Arc::new(LargeStringArray::from(texts(src, rows, &nulls))),
        19 => Arc::new(StringViewArray::from(texts(src, rows, &nulls))),
        20 => Arc::new(BinaryArray::from(blobs(src, rows, &nulls))),
        21 => Arc::new(LargeBinaryArray::from(blobs(src, rows, &nulls))),
        22 => Arc::new(BinaryViewArray::from(blobs(src, rows, &nulls))),
        23 => {
            let width = 1 + src.pick(4);
            let data = (0..rows).map(|_| src.take(width).to_vec());
            let values: Vec<Vec<u8>> = data
                .map(|mut v| {
                    v.resize(width, 0);
                    v
                })
                .collect();
            let items = values.iter().enumerate().map(|(i, v)| {
                nulls
                    .as_ref()
                    .is_none_or(|n| n.is_valid(i))
                    .then_some(v.as_slice())
            });
            Arc::new(
                FixedSizeBinaryArray::try_from_sparse_iter_with_size(items, width as i32).ok()?,
            )
        }
        24 => Arc::new(prim::<Date32Type>(src, rows, nulls)),
        25 => Arc::new(prim::<Date64Type>(src, rows, nulls)),
        26 => {
            let zone = match src.pick(ZONES.len() + 1) {
                0 => None,
                z => Some(ZONES[z - 1]),
            };
            match src.pick(4) {
                0 => {
                    Arc::new(prim::<TimestampSecondType>(src, rows, nulls).with_timezone_opt(zone))
                }
                1 => Arc::new(
                    prim::<TimestampMillisecondType>(src, rows, nulls).with_timezone_opt(zone),
                ),
                2 => Arc::new(
                    prim::<TimestampMicrosecondType>(src, rows, nulls).with_timezone_opt(zone),
                ),
                _ => Arc::new(
                    prim::<TimestampNanosecondType>(src, rows, nulls).with_timezone_opt(zone),
                ),
            }
        }
        27 => {
            let size = 1 + src.pick(4);
            let values = StringArray::from(texts(src, size, &None));
            let keys = prim::<Int8Type>(src, rows, nulls);
            Arc::new(DictionaryArray::try_new(keys, Arc::new(values)).ok()?)
        }
        28 => {
            let size = 1 + src.pick(4);
            let values = prim::<Int64Type>(src, size, None);
            let keys = prim::<UInt16Type>(src, rows, nulls);
            Arc::new(DictionaryArray::try_new(keys, Arc::new(values)).ok()?)
        }
        29 => Arc::new(ListArray::new_null(
            Arc::new(Field::new("item", DataType::Int32, true)),
            rows,
        )),
        _ => Arc::new(prim::<Time64MicrosecondType>(src, rows, nulls)),
    };
    Some(a)
}
