//! Tests of `input.rs`: chunk cuts, malformed quoting, agreement with csv-core.

use super::*;

fn chunks(input: &[u8], target: usize) -> Vec<(String, u64)> {
    let mut c = Chunker::new(
        input,
        Boundaries::Csv(CsvScanner::new(b',', Some(b'"'))),
        target,
    );
    let mut out = Vec::new();
    while let Some(ch) = c.next_chunk(false).unwrap() {
        out.push((String::from_utf8(ch.data).unwrap(), ch.first_line));
    }
    out
}

#[test]
fn cuts_at_record_ends_only() {
    let input = b"a,\"x\ny\",1\nb,\"\"\"q\",2\r\nc,z,3";
    for target in 1..input.len() + 2 {
        let cs = chunks(input, target);
        let joined: String = cs.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(joined.as_bytes(), input);
        for (text, line) in &cs {
            assert!(
                text.starts_with('a') && *line == 1
                    || text.starts_with('b') && *line == 3
                    || text.starts_with('c') && *line == 4,
                "{target}: {text:?} at {line}"
            );
        }
    }
}

#[test]
fn an_unterminated_quote_is_an_error() {
    let mut c = Chunker::new(
        &b"x\n\"open"[..],
        Boundaries::Csv(CsvScanner::new(b',', Some(b'"'))),
        1 << 20,
    );
    let e = c.next_chunk(false).unwrap_err();
    assert!(
        matches!(e, ChunkError::Scan(ScanError { line: 2, .. })),
        "{e:?}"
    );
}

/// Malformed quoting is carried by the chunk holding the record, at its bad byte, and the
/// record ends where csv-core ends it, whatever the chunk size.
#[test]
fn malformed_quoting_is_carried_by_its_chunk() {
    let input = b"a,b\"c,1\n\"ok\",2\n\"x\"y\"z\",3\r\n\"q\"\"\",4\nw,\"v\"\"\"u,5\n";
    for target in 1..input.len() + 2 {
        let mut c = Chunker::new(
            &input[..],
            Boundaries::Csv(CsvScanner::new(b',', Some(b'"'))),
            target,
        );
        let mut found = Vec::new();
        let mut joined = Vec::new();
        while let Some(ch) = c.next_chunk(false).unwrap() {
            for (p, e) in &ch.malformed {
                found.push((joined.len() + p, e.line, e.field, e.reason.clone()));
            }
            joined.extend_from_slice(&ch.data);
        }
        assert_eq!(joined, input);
        assert_eq!(
            found,
            [
                (3, 1, 2, "a quote inside an unquoted field".to_string()),
                (18, 3, 1, "characters after a closing quote".to_string()),
                (41, 5, 2, "characters after a closing quote".to_string()),
            ],
            "target {target}"
        );
    }
}

/// Record ends as csv-core finds them in `input` (its first call one byte long, as
/// `parse_csv` makes it, so that a BOM is data).
fn csv_core_record_ends(input: &[u8]) -> Vec<usize> {
    let mut rdr = csv_core::Reader::new();
    let (mut out, mut ends) = (vec![0u8; input.len() + 1], vec![0usize; input.len() + 2]);
    let (mut pos, mut found) = (0, Vec::new());
    let (mut first, mut nout, mut nend) = (true, 0, 0);
    loop {
        let feed = if first && pos < input.len() {
            &input[pos..=pos]
        } else {
            &input[pos..]
        };
        first = false;
        let (res, nin, o, e) = rdr.read_record(feed, &mut out[nout..], &mut ends[nend..]);
        pos += nin;
        (nout, nend) = (nout + o, nend + e);
        match res {
            csv_core::ReadRecordResult::Record => {
                found.push(pos);
                (nout, nend) = (0, 0);
            }
            csv_core::ReadRecordResult::End => return found,
            _ => {}
        }
    }
}

proptest::proptest! {
    /// Where the scanner reads on past malformed quoting, it ends records exactly where
    /// csv-core does (a BOM anywhere is data), and notes one malformation in a record at
    /// most; characters after a quoted field spanning lines are an error.
    #[test]
    fn the_scanner_ends_records_where_csv_core_does(
        input in proptest::collection::vec(
            proptest::sample::select(vec![b'a', b',', b'"', b'\r', b'\n', 0xEF, 0xBB, 0xBF]),
            0..120),
        bom in proptest::bool::ANY,
    ) {
        // A BOM first too: what a chunk after a record that ends before one starts with.
        let input = if bom { [&b"\xEF\xBB\xBF"[..], &input].concat() } else { input };
        let mut scanner = CsvScanner::new(b',', Some(b'"'));
        let mut ends = Vec::new();
        let scanned = scanner.scan(&input, |p, _| ends.push(p));
        proptest::prop_assume!(scanned.is_ok() && scanner.finish().is_ok());
        // Record starts, past the line ends before them (empty lines hold no record).
        let starts_of = |ends: &[usize]| {
            let mut v: Vec<usize> = std::iter::once(0)
                .chain(ends.iter().copied())
                .map(|mut p| {
                    while matches!(input.get(p), Some(b'\r' | b'\n')) {
                        p += 1;
                    }
                    p
                })
                .filter(|&p| p < input.len())
                .collect();
            v.dedup();
            v
        };
        let starts = starts_of(&ends);
        proptest::prop_assert_eq!(&starts, &starts_of(&csv_core_record_ends(&input)));
        let bad = scanner.take_malformed();
        for w in bad.windows(2) {
            let rec = |at: usize| starts.iter().filter(|&&s| s <= at).count();
            proptest::prop_assert!(rec(w[0].0) != rec(w[1].0), "two in one record: {:?}", bad);
        }
    }
}

proptest::proptest! {
    /// Chunks cover the input exactly, start after a whole line end (never inside a CRLF,
    /// whatever the read size) and know their first line, for CR, LF and CRLF mixed.
    #[test]
    fn chunks_start_at_line_ends_and_know_their_line(
        input in proptest::collection::vec(
            proptest::sample::select(vec![b'a', b',', b'\r', b'\n', b'"']), 0..200),
        target in 1usize..40,
        csv in proptest::bool::ANY,
    ) {
        let mut input = input;
        if csv {
            // Balanced quotes only around whole fields: drop quotes (quoting is covered
            // by the tests above), keep the line-end mix.
            input.retain(|&c| c != b'"');
        }
        let bounds = if csv {
            Boundaries::Csv(CsvScanner::new(b',', Some(b'"')))
        } else {
            Boundaries::Lines(LineScanner::default())
        };
        let mut c = Chunker::new(&input[..], bounds, target);
        let mut joined = Vec::new();
        while let Some(ch) = c.next_chunk(false).unwrap() {
            let at = joined.len();
            proptest::prop_assert_eq!(ch.file_offset as usize, at);
            proptest::prop_assert_eq!(ch.first_line, 1 + count_line_ends(&input, 0, at));
            if at > 0 {
                proptest::prop_assert!(matches!(input[at - 1], b'\r' | b'\n'));
                proptest::prop_assert!(!(input[at - 1] == b'\r' && input[at] == b'\n'));
            }
            joined.extend_from_slice(&ch.data);
        }
        proptest::prop_assert_eq!(joined, input);
    }
}
