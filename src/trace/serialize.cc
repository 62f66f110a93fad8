// Format "xsp-trace-v3" (docs/store.md). A blob is an uncompressed header followed by one zstd frame:
//   header : "XSPT" | version u8 (=3; 1 and 2 are still read) | payload size u64 LE
//   frame  : zstd level 3, with content size and checksum
//   payload: string table | clock | counters | assembly report | spans | processes (v3)
// v3 added the processes of a trace recorded across processes (Trace::processes): a count, then per process its
// pid (zigzag varint), name (string) and sorted thread ids (count, then deltas from the previous id).
// Integers in the payload are LEB128 varints, signed ones zigzag-encoded; strings are varint length + bytes.
// Span names, tag keys and text tag values are indices into the string table, since they repeat across spans.
// Per span, v2 writes the track as two varints (device + 1, 0 for a host thread; then the thread or stream id)
// and each tag as key index, type byte, then the value: a string index (kString), a zigzag varint (kInt), 8
// bytes IEEE-754 little-endian (kReal) or a count and zigzag varints (kIntList).
// v1 (read only) wrote one varint "thread id", with device streams as 0x5354 << 48 | device << 32 | stream, and
// every tag value as a string index; decode_trace() turns both into v2's typed model (v1_tag_type below).
// Ids and start times are written as deltas from the previous span (traces are usually sorted), durations as
// end - start: both keep the varints short.
// decode_trace() decompresses the whole frame and parses it in memory (Reader); TraceBlobReader parses the same
// payload from zstd's streaming decompressor (BlobStreamReader), span by span. Both use the decode_* templates, so
// they cannot disagree. The processes stay after the spans (no v4): a streaming consumer that needs them first reads
// the blob twice, and stores written now stay readable by older builds sharing them.
#include "xsp/trace/serialize.h"

#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

namespace xsp {

namespace {

constexpr char kMagic[4] = {'X', 'S', 'P', 'T'};
constexpr std::uint8_t kVersion = 3;
constexpr std::uint8_t kOldestVersion = 1;
constexpr std::size_t kHeaderBytes = 4 + 1 + 8;
constexpr int kZstdLevel = 3;
constexpr std::uint8_t kMaxLevel = static_cast<std::uint8_t>(Level::kHardware);
constexpr std::uint8_t kMaxRule = static_cast<std::uint8_t>(ParentRule::kContainment);

std::uint64_t zigzag(std::int64_t v) {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
std::int64_t unzigzag(std::uint64_t v) { return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1); }

class Writer {
 public:
  void u8(std::uint8_t v) { out_.push_back(v); }
  void varint(std::uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<std::uint8_t>(v | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<std::uint8_t>(v));
  }
  void svarint(std::int64_t v) { varint(zigzag(v)); }
  void f64(double v) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<std::uint8_t>(bits >> (8 * i)));
  }
  void str(std::string_view s) {
    varint(s.size());
    out_.insert(out_.end(), s.begin(), s.end());
  }
  std::vector<std::uint8_t>& bytes() { return out_; }

 private:
  std::vector<std::uint8_t> out_;
};

class Reader {
 public:
  Reader(const std::uint8_t* data, std::size_t size) : p_(data), end_(data + size) {}

  std::uint8_t u8(const char* what) {
    need(1, what);
    return *p_++;
  }
  std::uint64_t varint(const char* what) {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      need(1, what);
      const std::uint8_t b = *p_++;
      if (shift == 63 && b > 1) fail(std::string("varint overflow in ") + what);
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    fail(std::string("varint overflow in ") + what);
  }
  std::int64_t svarint(const char* what) { return unzigzag(varint(what)); }
  double f64(const char* what) {
    need(8, what);
    std::uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits |= static_cast<std::uint64_t>(p_[i]) << (8 * i);
    p_ += 8;
    double v = 0;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
  std::string str(const char* what) {
    const std::uint64_t n = varint(what);
    need(n, what);
    std::string s(reinterpret_cast<const char*>(p_), static_cast<std::size_t>(n));
    p_ += n;
    return s;
  }
  /// Reads an element count; every element takes at least `min_bytes`, which bounds a corrupt count before
  /// anything is allocated for it.
  std::size_t count(const char* what, std::size_t min_bytes) {
    const std::uint64_t n = varint(what);
    if (n > remaining() / min_bytes) fail(std::string("count of ") + what + " exceeds the data");
    return static_cast<std::size_t>(n);
  }
  std::size_t remaining() const { return static_cast<std::size_t>(end_ - p_); }

  [[noreturn]] static void fail(const std::string& msg) {
    throw std::runtime_error("decode_trace: corrupt xsp-trace blob: " + msg);
  }

 private:
  void need(std::uint64_t n, const char* what) {
    if (n > remaining()) fail(std::string("truncated while reading ") + what);
  }
  const std::uint8_t* p_;
  const std::uint8_t* end_;
};

class StringTable {
 public:
  std::uint64_t intern(const std::string& s) {
    auto [it, inserted] = index_.emplace(s, strings_.size());
    if (inserted) strings_.push_back(&it->first);
    return it->second;
  }
  const std::vector<const std::string*>& strings() const { return strings_; }

 private:
  std::unordered_map<std::string, std::uint64_t> index_;
  std::vector<const std::string*> strings_;
};

void write_tag_value(Writer& w, StringTable& table, const Tag& t) {
  // A typed tag whose text does not parse (possible only if someone edited `value` by hand) is kept as text.
  TagType type = t.type;
  std::optional<std::int64_t> i;
  std::optional<double> r;
  std::vector<std::int64_t> list;
  if (type == TagType::kInt && !(i = t.as_int())) type = TagType::kString;
  if (type == TagType::kReal && !(r = t.as_real())) type = TagType::kString;
  if (type == TagType::kIntList) list = t.as_int_list();
  w.u8(static_cast<std::uint8_t>(type));
  switch (type) {
    case TagType::kString:
      w.varint(table.intern(t.value));
      break;
    case TagType::kInt:
      w.svarint(*i);
      break;
    case TagType::kReal:
      w.f64(*r);
      break;
    case TagType::kIntList:
      w.varint(list.size());
      for (std::int64_t x : list) w.svarint(x);
      break;
  }
}

// Keys whose values are text even when they look like numbers (a module named "0" in an nn.Sequential).
bool is_text_key(std::string_view key) {
  static constexpr std::string_view kText[] = {"module",   "module_type", "shapes", "model", "framework", "trace_level",
                                               "domain",   "kind",        "replay", "sync",  "copy_kind", "src_kind",
                                               "dst_kind", "attribution", "kept",   "split", "layer"};
  for (std::string_view k : kText) {
    if (k == key) return true;
  }
  return false;
}

bool all_digits(std::string_view s) {
  if (!s.empty() && s.front() == '-') s.remove_prefix(1);
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// v1 wrote every tag value as text; v1 writers wrote numbers in decimal (integers) or "%.17g"/"%.3f" (reals) and
// grid/block as "x,y,z". Reading those back as typed values makes old stores export numbers like new ones.
Tag v1_tag(std::string key, std::string value) {
  Tag t(std::move(key), std::move(value));
  if (is_text_key(t.key) || t.value.empty()) return t;
  if ((t.key == "grid" || t.key == "block") && std::count(t.value.begin(), t.value.end(), ',') == 2) {
    std::vector<std::int64_t> xyz;
    std::string_view rest = t.value;
    for (int i = 0; i < 3; ++i) {
      const std::size_t comma = rest.find(',');
      const std::string_view part = rest.substr(0, comma);
      if (!all_digits(part)) return t;
      xyz.push_back(std::stoll(std::string(part)));
      rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma + 1);
    }
    return Tag(t.key, xyz);
  }
  // Leading zeros ("007") are an identifier, not a number.
  const std::string_view digits = t.value.front() == '-' ? std::string_view(t.value).substr(1) : t.value;
  // Typed values are rebuilt from the number, so their text is the canonical one a v2 writer gives.
  if (all_digits(t.value)) {
    if (digits.size() > 1 && digits.front() == '0') return t;
    if (const auto i = t.as_int()) return Tag(t.key, *i);
    return t;
  }
  const bool numeric_chars = t.value.find_first_not_of("0123456789.eE+-") == std::string::npos;
  if (numeric_chars && t.value.find_first_of("0123456789") != std::string::npos) {
    if (const auto r = t.as_real()) return Tag(t.key, *r);
  }
  return t;
}

std::vector<std::uint8_t> encode_payload(const Trace& trace) {
  StringTable table;
  for (const Span& s : trace.spans) {
    table.intern(s.name);
    for (const Tag& t : s.tags) {
      table.intern(t.key);
      if (t.type == TagType::kString) table.intern(t.value);
    }
  }

  Writer w;
  w.varint(table.strings().size());
  for (const std::string* s : table.strings()) w.str(*s);

  w.str(trace.clock.host_clock);
  w.svarint(trace.clock.unix_offset_ns);
  w.str(trace.clock.device_clock_mapping);

  w.varint(trace.counters.size());
  for (const auto& [name, value] : trace.counters) {
    w.str(name);
    w.varint(value);
  }

  const AssemblyReport& a = trace.assembly;
  for (std::size_t v :
       {a.by_context, a.by_correlation, a.by_containment, a.roots, a.unparented, a.dangling_parent_ids}) {
    w.varint(v);
  }

  w.varint(trace.spans.size());
  SpanId prev_id = 0;
  std::int64_t prev_start = 0;
  for (const Span& s : trace.spans) {
    // Wrapping differences: ids are unsigned and any value must round-trip.
    w.svarint(static_cast<std::int64_t>(s.id - prev_id));
    w.varint(s.parent_id);
    w.u8(static_cast<std::uint8_t>(s.level));
    w.u8(static_cast<std::uint8_t>(s.parent_rule));
    w.varint(table.intern(s.name));
    w.svarint(
        static_cast<std::int64_t>(static_cast<std::uint64_t>(s.start_ns) - static_cast<std::uint64_t>(prev_start)));
    w.svarint(static_cast<std::int64_t>(static_cast<std::uint64_t>(s.end_ns) - static_cast<std::uint64_t>(s.start_ns)));
    w.varint(s.track.is_device() ? std::uint64_t{s.track.device} + 1 : 0);
    w.varint(s.track.id);
    w.varint(s.correlation_id);
    w.varint(s.tags.size());
    for (const Tag& t : s.tags) {
      w.varint(table.intern(t.key));
      write_tag_value(w, table, t);
    }
    prev_id = s.id;
    prev_start = s.start_ns;
  }
  w.varint(trace.processes.size());
  for (const TraceProcess& p : trace.processes) {
    w.svarint(p.pid);
    w.str(p.name);
    std::vector<std::uint64_t> threads = p.thread_ids;
    std::sort(threads.begin(), threads.end());
    w.varint(threads.size());
    std::uint64_t prev_thread = 0;
    for (std::uint64_t t : threads) {
      w.varint(t - prev_thread);
      prev_thread = t;
    }
  }
  return std::move(w.bytes());
}

// v1's device-stream track ids: "ST" in the top 16 bits, the device in the next 16, the stream in the low 32.
constexpr std::uint64_t kV1StreamTag = 0x5354000000000000ULL;
constexpr std::uint64_t kV1StreamTagMask = 0xFFFF000000000000ULL;

Track v1_track(std::uint64_t thread_id) {
  if ((thread_id & kV1StreamTagMask) != kV1StreamTag) return Track::host_thread(thread_id);
  return Track::stream(static_cast<std::uint32_t>((thread_id >> 32) & 0xFFFFu), thread_id & 0xFFFFFFFFu);
}

// Decoding, shared by decode_trace() (Reader over the whole payload) and TraceBlobReader (BlobStreamReader over a
// zstd stream): both readers have u8, varint, svarint, f64, str, count and remaining.

// Everything before the spans: string table, clock, counters, assembly report; returns the span count.
template <typename R>
std::size_t decode_prelude(R& r, std::vector<std::string>& strings, Trace& trace) {
  const std::size_t n_strings = r.count("string table", 1);
  strings.reserve(n_strings);
  for (std::size_t i = 0; i < n_strings; ++i) strings.push_back(r.str("string table entry"));

  trace.clock.host_clock = r.str("clock");
  trace.clock.unix_offset_ns = r.svarint("clock");
  trace.clock.device_clock_mapping = r.str("clock");

  const std::size_t n_counters = r.count("counters", 2);
  for (std::size_t i = 0; i < n_counters; ++i) {
    std::string name = r.str("counter name");
    trace.counters[std::move(name)] = r.varint("counter value");
  }

  AssemblyReport& a = trace.assembly;
  for (std::size_t* v :
       {&a.by_context, &a.by_correlation, &a.by_containment, &a.roots, &a.unparented, &a.dangling_parent_ids}) {
    *v = static_cast<std::size_t>(r.varint("assembly report"));
  }
  // A span takes at least 10 bytes (ten fields of one byte or more).
  return r.count("spans", 10);
}

const std::string& blob_string_at(const std::vector<std::string>& strings, std::uint64_t index, const char* what) {
  if (index >= strings.size()) Reader::fail(std::string("string index out of range in ") + what);
  return strings[static_cast<std::size_t>(index)];
}

// One span into `s` (overwritten whole); `prev_id` and `prev_start` carry the deltas from span to span.
template <typename R>
void decode_span(R& r, const std::vector<std::string>& strings, std::uint8_t version, SpanId& prev_id,
                 std::int64_t& prev_start, Span& s) {
  s.id = prev_id + static_cast<std::uint64_t>(r.svarint("span id"));
  s.parent_id = r.varint("span parent id");
  const std::uint8_t level = r.u8("span level");
  if (level > kMaxLevel) Reader::fail("unknown span level " + std::to_string(level));
  s.level = static_cast<Level>(level);
  const std::uint8_t rule = r.u8("span parent rule");
  if (rule > kMaxRule) Reader::fail("unknown parent rule " + std::to_string(rule));
  s.parent_rule = static_cast<ParentRule>(rule);
  s.name = blob_string_at(strings, r.varint("span name"), "span name");
  s.start_ns = static_cast<std::int64_t>(static_cast<std::uint64_t>(prev_start) +
                                         static_cast<std::uint64_t>(r.svarint("span start")));
  s.end_ns = static_cast<std::int64_t>(static_cast<std::uint64_t>(s.start_ns) +
                                       static_cast<std::uint64_t>(r.svarint("span duration")));
  if (version == 1) {
    s.track = v1_track(r.varint("span thread id"));
  } else {
    const std::uint64_t device = r.varint("span track device");
    if (device > std::uint64_t{Track::kHost}) Reader::fail("span track device out of range");
    s.track.device = device == 0 ? Track::kHost : static_cast<std::uint32_t>(device - 1);
    s.track.id = r.varint("span track id");
  }
  s.correlation_id = r.varint("span correlation id");
  const std::size_t n_tags = r.count("span tags", 2);
  s.tags.clear();
  s.tags.reserve(n_tags);
  for (std::size_t k = 0; k < n_tags; ++k) {
    std::string key = blob_string_at(strings, r.varint("tag key"), "tag key");
    if (version == 1) {
      s.tags.push_back(v1_tag(std::move(key), blob_string_at(strings, r.varint("tag value"), "tag value")));
      continue;
    }
    const std::uint8_t type = r.u8("tag type");
    switch (type) {
      case static_cast<std::uint8_t>(TagType::kString):
        s.tags.emplace_back(std::move(key), blob_string_at(strings, r.varint("tag value"), "tag value"));
        break;
      case static_cast<std::uint8_t>(TagType::kInt):
        s.tags.emplace_back(std::move(key), r.svarint("tag value"));
        break;
      case static_cast<std::uint8_t>(TagType::kReal): {
        const double v = r.f64("tag value");
        if (!std::isfinite(v)) Reader::fail("non-finite real tag value");
        s.tags.emplace_back(std::move(key), v);
        break;
      }
      case static_cast<std::uint8_t>(TagType::kIntList): {
        const std::size_t n = r.count("tag list", 1);
        std::vector<std::int64_t> xs;
        xs.reserve(n);
        for (std::size_t x = 0; x < n; ++x) xs.push_back(r.svarint("tag list value"));
        s.tags.emplace_back(std::move(key), xs);
        break;
      }
      default:
        Reader::fail("unknown tag type " + std::to_string(type));
    }
  }
  prev_id = s.id;
  prev_start = s.start_ns;
}

// What follows the spans: v3's processes; then nothing may remain of the payload.
template <typename R>
void decode_epilogue(R& r, std::uint8_t version, std::vector<TraceProcess>& processes) {
  if (version >= 3) {
    const std::size_t n_processes = r.count("processes", 3);
    processes.resize(n_processes);
    for (TraceProcess& p : processes) {
      p.pid = r.svarint("process pid");
      p.name = r.str("process name");
      const std::size_t n_threads = r.count("process threads", 1);
      p.thread_ids.reserve(n_threads);
      std::uint64_t prev_thread = 0;
      for (std::size_t t = 0; t < n_threads; ++t) {
        prev_thread += r.varint("process thread id");
        p.thread_ids.push_back(prev_thread);
      }
    }
  }
  if (r.remaining() != 0) Reader::fail(std::to_string(r.remaining()) + " trailing bytes after the spans");
}

Trace decode_payload(const std::uint8_t* data, std::size_t size, std::uint8_t version) {
  Reader r(data, size);
  Trace trace;
  std::vector<std::string> strings;
  trace.spans.resize(decode_prelude(r, strings, trace));
  SpanId prev_id = 0;
  std::int64_t prev_start = 0;
  for (Span& s : trace.spans) decode_span(r, strings, version, prev_id, prev_start, s);
  decode_epilogue(r, version, trace.processes);
  return trace;
}

// The header of a blob: checks magic and version, returns the payload size.
std::uint64_t check_blob_header(const std::uint8_t* header, std::size_t size) {
  if (size < kHeaderBytes) {
    throw std::runtime_error("decode_trace: blob of " + std::to_string(size) +
                             " bytes is shorter than the xsp-trace header");
  }
  if (std::memcmp(header, kMagic, 4) != 0) throw std::runtime_error("decode_trace: bad magic (not an XSPT blob)");
  if (header[4] < kOldestVersion || header[4] > kVersion) {
    throw std::runtime_error("decode_trace: unknown format version " + std::to_string(header[4]) + " (expected " +
                             std::to_string(kOldestVersion) + " to " + std::to_string(kVersion) + ")");
  }
  std::uint64_t payload_bytes = 0;
  for (int i = 0; i < 8; ++i) payload_bytes |= static_cast<std::uint64_t>(header[5 + i]) << (8 * i);
  return payload_bytes;
}

// The payload of a blob read from a ByteSource through zstd's streaming decompressor, with Reader's interface.
// Holds one block of compressed input and one of decompressed output.
class BlobStreamReader {
 public:
  BlobStreamReader(ByteSource source, std::size_t chunk_bytes)
      : source_(std::move(source)), in_(std::max<std::size_t>(chunk_bytes, 64)), out_(ZSTD_DStreamOutSize()) {
    dctx_ = ZSTD_createDCtx();
    if (dctx_ == nullptr) throw std::runtime_error("decode_trace: cannot create a zstd context");
  }
  ~BlobStreamReader() { ZSTD_freeDCtx(dctx_); }
  BlobStreamReader(const BlobStreamReader&) = delete;
  BlobStreamReader& operator=(const BlobStreamReader&) = delete;

  /// Reads and checks the header and the zstd frame header; returns the format version.
  std::uint8_t open() {
    std::uint8_t header[kHeaderBytes];
    std::size_t got = 0;
    while (got < kHeaderBytes) {
      const std::size_t n = source_(header + got, kHeaderBytes - got);
      if (n == 0) break;
      got += n;
    }
    payload_bytes_ = check_blob_header(header, got);
    // The frame header announces the content size: compared with ours before anything is allocated from counts.
    constexpr std::size_t kFrameHeaderMax = 18;
    while (in_size_ < kFrameHeaderMax && fill_input()) {
    }
    const unsigned long long content = ZSTD_getFrameContentSize(in_.data(), in_size_);
    if (content == ZSTD_CONTENTSIZE_ERROR) throw std::runtime_error("decode_trace: not a zstd frame (corrupt blob)");
    if (content == ZSTD_CONTENTSIZE_UNKNOWN)
      throw std::runtime_error("decode_trace: zstd frame without a content size (not written by encode_trace)");
    if (content != payload_bytes_) {
      throw std::runtime_error("decode_trace: zstd frame size " + std::to_string(content) +
                               " does not match the header's payload size " + std::to_string(payload_bytes_));
    }
    return header[4];
  }

  std::uint8_t u8(const char* what) {
    if (pos_ == len_) refill(what);
    ++consumed_;
    return out_[pos_++];
  }
  std::uint64_t varint(const char* what) {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const std::uint8_t b = u8(what);
      if (shift == 63 && b > 1) Reader::fail(std::string("varint overflow in ") + what);
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    Reader::fail(std::string("varint overflow in ") + what);
  }
  std::int64_t svarint(const char* what) { return unzigzag(varint(what)); }
  double f64(const char* what) {
    std::uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits |= static_cast<std::uint64_t>(u8(what)) << (8 * i);
    double v = 0;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
  std::string str(const char* what) {
    const std::uint64_t n = varint(what);
    if (n > remaining()) Reader::fail(std::string("truncated while reading ") + what);
    std::string s(static_cast<std::size_t>(n), '\0');
    std::size_t done = 0;
    while (done < s.size()) {
      if (pos_ == len_) refill(what);
      const std::size_t k = std::min(s.size() - done, len_ - pos_);
      std::memcpy(s.data() + done, out_.data() + pos_, k);
      pos_ += k;
      done += k;
      consumed_ += k;
    }
    return s;
  }
  std::size_t count(const char* what, std::size_t min_bytes) {
    const std::uint64_t n = varint(what);
    if (n > remaining() / min_bytes) Reader::fail(std::string("count of ") + what + " exceeds the data");
    return static_cast<std::size_t>(n);
  }
  /// Payload bytes the header announces that are not read yet.
  std::uint64_t remaining() const { return payload_bytes_ - consumed_; }

  /// After the whole payload was read: the frame must end here (zstd verifies its checksum then) and the blob
  /// with it.
  void finish() {
    if (pos_ != len_) Reader::fail("zstd frame longer than the header's payload size");
    while (!frame_done_) {
      ZSTD_outBuffer output{out_.data(), out_.size(), 0};
      step(output, "the end of the zstd frame");
      if (output.pos != 0) Reader::fail("zstd frame longer than the header's payload size");
    }
    if (in_pos_ != in_size_ || fill_input())
      throw std::runtime_error("decode_trace: trailing bytes after the zstd frame");
  }

 private:
  // Reads more compressed input when all of it was used; false at the end of the source.
  bool fill_input() {
    if (source_eof_) return false;
    if (in_pos_ == in_size_) in_pos_ = in_size_ = 0;
    if (in_size_ == in_.size()) return true;
    const std::size_t n = source_(in_.data() + in_size_, in_.size() - in_size_);
    if (n == 0) {
      source_eof_ = true;
      return false;
    }
    in_size_ += n;
    return true;
  }

  // One ZSTD_decompressStream call, reading input first when it is used up.
  void step(ZSTD_outBuffer& output, const char* what) {
    if (in_pos_ == in_size_ && !fill_input()) {
      throw std::runtime_error(std::string("decode_trace: truncated blob: the zstd frame ends before ") + what);
    }
    ZSTD_inBuffer input{in_.data(), in_size_, in_pos_};
    const std::size_t rc = ZSTD_decompressStream(dctx_, &output, &input);
    in_pos_ = input.pos;
    if (ZSTD_isError(rc)) {
      throw std::runtime_error(std::string("decode_trace: zstd decompression failed: ") + ZSTD_getErrorName(rc));
    }
    if (rc == 0) frame_done_ = true;
  }

  // Decompresses the next block of payload into out_.
  void refill(const char* what) {
    if (remaining() == 0) Reader::fail(std::string("truncated while reading ") + what);
    ZSTD_outBuffer output{out_.data(), out_.size(), 0};
    while (output.pos == 0) {
      if (frame_done_) throw std::runtime_error("decode_trace: zstd frame shorter than announced");
      step(output, what);
    }
    pos_ = 0;
    len_ = output.pos;
    if (len_ > remaining()) Reader::fail("zstd frame longer than the header's payload size");
  }

  ByteSource source_;
  ZSTD_DCtx* dctx_ = nullptr;
  std::vector<std::uint8_t> in_;
  std::size_t in_pos_ = 0, in_size_ = 0;
  bool source_eof_ = false;
  std::vector<std::uint8_t> out_;
  std::size_t pos_ = 0, len_ = 0;
  bool frame_done_ = false;
  std::uint64_t payload_bytes_ = 0;
  std::uint64_t consumed_ = 0;
};

}  // namespace

std::vector<std::uint8_t> encode_trace(const Trace& trace) {
  const std::vector<std::uint8_t> payload = encode_payload(trace);

  std::vector<std::uint8_t> blob(kHeaderBytes + ZSTD_compressBound(payload.size()));
  std::memcpy(blob.data(), kMagic, 4);
  blob[4] = kVersion;
  const std::uint64_t payload_bytes = payload.size();
  for (int i = 0; i < 8; ++i) blob[5 + i] = static_cast<std::uint8_t>(payload_bytes >> (8 * i));

  // The frame checksum lets decode_trace() tell a flipped bit in the data from a valid trace.
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  if (cctx == nullptr) throw std::runtime_error("encode_trace: cannot create a zstd context");
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, kZstdLevel);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  const std::size_t compressed =
      ZSTD_compress2(cctx, blob.data() + kHeaderBytes, blob.size() - kHeaderBytes, payload.data(), payload.size());
  ZSTD_freeCCtx(cctx);
  if (ZSTD_isError(compressed)) {
    throw std::runtime_error(std::string("encode_trace: zstd compression failed: ") + ZSTD_getErrorName(compressed));
  }
  blob.resize(kHeaderBytes + compressed);
  return blob;
}

Trace decode_trace(const std::vector<std::uint8_t>& blob) {
  const std::uint64_t payload_bytes = check_blob_header(blob.data(), blob.size());

  const std::uint8_t* frame = blob.data() + kHeaderBytes;
  const std::size_t frame_bytes = blob.size() - kHeaderBytes;
  const unsigned long long content = ZSTD_getFrameContentSize(frame, frame_bytes);
  if (content == ZSTD_CONTENTSIZE_ERROR) throw std::runtime_error("decode_trace: not a zstd frame (corrupt blob)");
  // Comparing with the header before allocating keeps a corrupt size from causing a huge allocation.
  if (content != payload_bytes) {
    throw std::runtime_error("decode_trace: zstd frame size " + std::to_string(content) +
                             " does not match the header's payload size " + std::to_string(payload_bytes));
  }
  const std::size_t frame_size = ZSTD_findFrameCompressedSize(frame, frame_bytes);
  if (ZSTD_isError(frame_size)) {
    throw std::runtime_error(std::string("decode_trace: truncated or corrupt zstd frame: ") +
                             ZSTD_getErrorName(frame_size));
  }
  if (frame_size != frame_bytes) throw std::runtime_error("decode_trace: trailing bytes after the zstd frame");

  std::vector<std::uint8_t> payload(static_cast<std::size_t>(payload_bytes));
  const std::size_t got = ZSTD_decompress(payload.data(), payload.size(), frame, frame_bytes);
  if (ZSTD_isError(got)) {
    throw std::runtime_error(std::string("decode_trace: zstd decompression failed: ") + ZSTD_getErrorName(got));
  }
  if (got != payload.size()) throw std::runtime_error("decode_trace: zstd frame shorter than announced");
  return decode_payload(payload.data(), payload.size(), blob[4]);
}

struct TraceBlobReader::Impl {
  Impl(ByteSource source, std::size_t chunk_bytes) : r(std::move(source), chunk_bytes) {}
  BlobStreamReader r;
  std::uint8_t version = 0;
  std::vector<std::string> strings;
  Trace header;  // no spans
  std::uint64_t span_count = 0, spans_read = 0;
  SpanId prev_id = 0;
  std::int64_t prev_start = 0;
  bool done = false;

  void end() {
    decode_epilogue(r, version, header.processes);
    r.finish();
    done = true;
  }
};

TraceBlobReader::TraceBlobReader(ByteSource source, std::size_t chunk_bytes)
    : impl_(std::make_unique<Impl>(std::move(source), chunk_bytes)) {
  impl_->version = impl_->r.open();
  impl_->span_count = decode_prelude(impl_->r, impl_->strings, impl_->header);
}

TraceBlobReader::~TraceBlobReader() = default;

std::uint8_t TraceBlobReader::version() const { return impl_->version; }
const ClockInfo& TraceBlobReader::clock() const { return impl_->header.clock; }
const std::map<std::string, std::uint64_t>& TraceBlobReader::counters() const { return impl_->header.counters; }
const AssemblyReport& TraceBlobReader::assembly() const { return impl_->header.assembly; }
std::uint64_t TraceBlobReader::span_count() const { return impl_->span_count; }
std::uint64_t TraceBlobReader::spans_read() const { return impl_->spans_read; }
std::size_t TraceBlobReader::string_count() const { return impl_->strings.size(); }

bool TraceBlobReader::next(Span& span) {
  Impl& m = *impl_;
  if (m.spans_read == m.span_count) {
    if (!m.done) m.end();
    return false;
  }
  decode_span(m.r, m.strings, m.version, m.prev_id, m.prev_start, span);
  ++m.spans_read;
  return true;
}

void TraceBlobReader::skip_rest() {
  Span scratch;
  while (next(scratch)) {
  }
}

const std::vector<TraceProcess>& TraceBlobReader::processes() const {
  if (!impl_->done) throw std::logic_error("TraceBlobReader::processes() called before every span was read");
  return impl_->header.processes;
}

Trace TraceBlobReader::header() const { return impl_->header; }

ByteSource memory_source(const std::uint8_t* data, std::size_t size) {
  return [data, size, offset = std::size_t{0}](std::uint8_t* out, std::size_t max_bytes) mutable {
    const std::size_t n = std::min(max_bytes, size - offset);
    if (n != 0) std::memcpy(out, data + offset, n);
    offset += n;
    return n;
  };
}

std::vector<TraceProcess> read_trace_processes(ByteSource source) {
  TraceBlobReader reader(std::move(source));
  if (reader.version() < 3) return {};
  reader.skip_rest();
  return reader.processes();
}

}  // namespace xsp
