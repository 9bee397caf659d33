//! Encoded key order equals value order, for every type and for composite keys (NULL first),
//! and keys decode back to their values.

use std::borrow::Cow;
use std::cmp::Ordering;

use proptest::prelude::*;
use sluice_import::keycode::{decode_column, encode_value};
use sluice_import::row::{decode_row, encode_row};
use sluice_import::types::{ColumnType, Value};

const TYPES: [ColumnType; 9] = [
    ColumnType::BigInt,
    ColumnType::Double,
    ColumnType::Decimal {
        precision: 38,
        scale: 4,
    },
    ColumnType::Bool,
    ColumnType::Text { max_chars: None },
    ColumnType::Bytes,
    ColumnType::Date,
    ColumnType::Timestamp,
    ColumnType::Int,
];

fn value_of(ty: usize) -> BoxedStrategy<Value<'static>> {
    let v: BoxedStrategy<Value<'static>> = match TYPES[ty] {
        ColumnType::BigInt => any::<i64>().prop_map(Value::Int).boxed(),
        ColumnType::Int => any::<i32>().prop_map(|v| Value::Int(v.into())).boxed(),
        ColumnType::Double => any::<f64>()
            .prop_filter("no NaN", |d| !d.is_nan())
            .prop_map(|d| Value::Double(if d == 0.0 { 0.0 } else { d }))
            .boxed(),
        ColumnType::Decimal { .. } => (-(10i128.pow(37))..10i128.pow(37))
            .prop_map(Value::Decimal)
            .boxed(),
        ColumnType::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
        ColumnType::Text { .. } => ".{0,6}"
            .prop_map(|s: String| Value::Text(Cow::Owned(s)))
            .boxed(),
        ColumnType::Bytes => proptest::collection::vec(
            prop_oneof![Just(0u8), Just(1), Just(255), any::<u8>()],
            0..6,
        )
        .prop_map(|b| Value::Bytes(Cow::Owned(b)))
        .boxed(),
        ColumnType::Date => any::<i32>().prop_map(Value::Date).boxed(),
        ColumnType::Timestamp => any::<i64>().prop_map(Value::Timestamp).boxed(),
        _ => unreachable!(),
    };
    prop_oneof![1 => Just(Value::Null), 6 => v].boxed()
}

fn cmp(a: &Value<'_>, b: &Value<'_>) -> Ordering {
    match (a, b) {
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Null, _) => Ordering::Less,
        (_, Value::Null) => Ordering::Greater,
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Double(x), Value::Double(y)) => x.partial_cmp(y).unwrap(),
        (Value::Decimal(x), Value::Decimal(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Text(x), Value::Text(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Value::Bytes(x), Value::Bytes(y)) => x.cmp(y),
        (Value::Date(x), Value::Date(y)) => x.cmp(y),
        (Value::Timestamp(x), Value::Timestamp(y)) => x.cmp(y),
        _ => unreachable!("same column, same type"),
    }
}

/// A composite key schema (1–3 column types) and two tuples of it.
fn two_tuples() -> impl Strategy<Value = (Vec<usize>, Vec<Value<'static>>, Vec<Value<'static>>)> {
    proptest::collection::vec(0..TYPES.len(), 1..4).prop_flat_map(|tys| {
        let a: Vec<_> = tys.iter().map(|&t| value_of(t)).collect();
        let b: Vec<_> = tys.iter().map(|&t| value_of(t)).collect();
        (Just(tys), a, b)
    })
}

fn encode(vals: &[Value<'_>]) -> Vec<u8> {
    let mut k = Vec::new();
    for v in vals {
        encode_value(&mut k, v);
    }
    k
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn key_order_is_value_order((tys, a, b) in two_tuples()) {
        let want = a.iter().zip(&b).map(|(x, y)| cmp(x, y)).find(|o| o.is_ne()).unwrap_or(Ordering::Equal);
        let (ka, kb) = (encode(&a), encode(&b));
        prop_assert_eq!(ka.cmp(&kb), want, "{:?} vs {:?}", a, b);
        // Decodes back, consuming exactly the key.
        let mut s = ka.as_slice();
        for (t, v) in tys.iter().zip(&a) {
            let got = decode_column(&mut s, &TYPES[*t]).unwrap();
            prop_assert_eq!(&got, v);
        }
        prop_assert!(s.is_empty());
        // Row values round trip too.
        let types: Vec<ColumnType> = tys.iter().map(|t| TYPES[*t]).collect();
        let mut row = Vec::new();
        encode_row(&mut row, 7, &a);
        prop_assert_eq!(decode_row(&row, &types).unwrap(), a);
    }

    #[test]
    fn key_heads_agree_with_key_order(
        a in proptest::collection::vec(prop_oneof![Just(0u8), Just(255), any::<u8>()], 0..20),
        b in proptest::collection::vec(prop_oneof![Just(0u8), Just(255), any::<u8>()], 0..20),
    ) {
        // Keys of one index share the 8-byte table/index prefix; the head is what follows.
        let a = [&[0, 0, 0, 1, 0, 0, 0, 2][..], &a].concat();
        let b = [&[0, 0, 0, 1, 0, 0, 0, 2][..], &b].concat();
        let (ha, hb) = (sluice_import::parse::key_head(&a), sluice_import::parse::key_head(&b));
        if ha != hb {
            prop_assert_eq!(ha.cmp(&hb), a.cmp(&b));
        }
    }

    #[test]
    fn decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..40), t in 0..TYPES.len()) {
        let mut s = bytes.as_slice();
        let _ = decode_column(&mut s, &TYPES[t]);
        let _ = decode_row(&bytes, &TYPES);
    }
}
