// Raw-table scan through RocksDB's own SstFileReader, which the Rust crate's C API lacks.
// One call scans a whole file in C++ (no per-entry FFI crossing) with SstFileReader's raw table
// iterator.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "rocksdb/iterator.h"
#include "rocksdb/options.h"
#include "rocksdb/sst_file_reader.h"
#include "rocksdb/table.h"

namespace {
char* dup_error(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (p != nullptr) {
    std::memcpy(p, s.data(), s.size());
    p[s.size()] = '\0';
  }
  return p;
}
}  // namespace

extern "C" {

// Scans every entry of the SST at `path`; adds the entry count and user key + value bytes to
// `*entries` and `*bytes`. Returns 0 on success; otherwise 1 and a malloc'd message in `*err`
// (free it with anchor_free_error).
int anchor_sst_scan(const char* path, uint64_t* entries, uint64_t* bytes, char** err) {
  rocksdb::Options options;
  rocksdb::SstFileReader reader(options);
  rocksdb::Status s = reader.Open(path);
  if (!s.ok()) {
    *err = dup_error(s.ToString());
    return 1;
  }
  // The raw table iterator: internal keys straight from the table, as Sluice's `Table` and
  // Pebble's `sstable.Reader` iterate (NewIterator would wrap it in a DB iterator with
  // snapshot and user-key logic). Block checksums are verified as blocks are read.
  std::unique_ptr<rocksdb::Iterator> it = reader.NewTableIterator();
  uint64_t n = 0, b = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    n += 1;
    // Internal key = user key + 8-byte (seqno, type) trailer.
    b += it->key().size() - 8 + it->value().size();
  }
  s = it->status();
  if (!s.ok()) {
    *err = dup_error(s.ToString());
    return 1;
  }
  *entries += n;
  *bytes += b;
  return 0;
}

void anchor_free_error(char* err) { std::free(err); }

}  // extern "C"
