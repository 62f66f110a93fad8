#include "xsp/trace/perfetto.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "test_util.h"

namespace xsp {
namespace {

using testing::make_span;

// ---- A protobuf wire decoder of its own (not the writer's code), and a reader of the few Perfetto messages the
// writer emits, with field numbers as tests/fixtures/perfetto/xsp_pftrace_subset.proto declares them.

struct Field {
  std::uint32_t number = 0;
  std::uint32_t wire_type = 0;
  std::uint64_t value = 0;  // varint or fixed64
  std::string bytes;        // length-delimited
};

std::uint64_t read_varint(const std::string& s, std::size_t& pos) {
  std::uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= s.size()) throw std::runtime_error("truncated varint");
    const auto b = static_cast<unsigned char>(s[pos++]);
    v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return v;
  }
  throw std::runtime_error("varint too long");
}

std::vector<Field> decode(const std::string& s) {
  std::vector<Field> fields;
  std::size_t pos = 0;
  while (pos < s.size()) {
    const std::uint64_t key = read_varint(s, pos);
    Field f;
    f.number = static_cast<std::uint32_t>(key >> 3);
    f.wire_type = static_cast<std::uint32_t>(key & 7);
    switch (f.wire_type) {
      case 0:
        f.value = read_varint(s, pos);
        break;
      case 1:
        if (pos + 8 > s.size()) throw std::runtime_error("truncated fixed64");
        for (int i = 0; i < 8; ++i)
          f.value |= static_cast<std::uint64_t>(static_cast<unsigned char>(s[pos + i])) << (8 * i);
        pos += 8;
        break;
      case 2: {
        const std::uint64_t n = read_varint(s, pos);
        if (pos + n > s.size()) throw std::runtime_error("truncated bytes");
        f.bytes = s.substr(pos, n);
        pos += n;
        break;
      }
      default:
        throw std::runtime_error("unexpected wire type " + std::to_string(f.wire_type));
    }
    fields.push_back(std::move(f));
  }
  return fields;
}

const Field* first(const std::vector<Field>& fields, std::uint32_t number) {
  for (const Field& f : fields) {
    if (f.number == number) return &f;
  }
  return nullptr;
}

std::uint64_t value_of(const std::vector<Field>& fields, std::uint32_t number, std::uint64_t fallback = 0) {
  const Field* f = first(fields, number);
  return f ? f->value : fallback;
}

using Value = std::variant<std::int64_t, double, std::string, std::vector<std::int64_t>>;

struct Descriptor {
  std::uint64_t uuid = 0, parent_uuid = 0;
  std::string name;
  bool is_process = false, is_thread = false, is_counter = false;
  std::int64_t pid = 0, tid = 0;
  std::string process_name, thread_name;
};

struct Slice {
  std::uint64_t track = 0;
  std::string name, category;
  std::int64_t start_ns = 0, end_ns = -1;
  int depth = 0;
  std::map<std::string, Value> args;
  std::vector<std::uint64_t> flow_ids, terminating_flow_ids;
  bool span_id_implied = false;        // "xsp.span_id" was left out and rebuilt by the rule
  bool correlation_implied = false;    // "correlation" was left out and rebuilt from the slice's flow id
  std::set<std::string> tags_implied;  // repeated kernel tags left out and carried over from the previous slice
};

struct CounterPoint {
  std::uint64_t track;
  std::int64_t ts_ns;
  double value;
  bool is_int;    // counter_value / extra_counter_values (an integral value) rather than a double
  bool extra;     // an extra counter value of its event (by position on TrackEventDefaults' lists)
  bool on_slice;  // carried by a slice's BEGIN rather than a TYPE_COUNTER event
};

/// A .pftrace as a reader of Perfetto's TrackEvent would see it: interned ids resolved per incremental-state
/// generation, slices paired per track. Fails the test on anything malformed.
struct Decoded {
  std::size_t packets = 0;
  std::size_t resets = 0;
  std::size_t interned_name_entries = 0;
  std::map<std::string, std::size_t> interned_values;  // debug_annotation_string_values: entries per string
  std::size_t counter_events = 0;                      // TYPE_COUNTER events
  std::size_t max_extra_counters = 0;                  // the most extra counter values on one event
  std::uint64_t primary_clock = 0, default_clock = 0;
  std::set<std::uint64_t> sequences;
  std::size_t events_without_track_uuid = 0;  // events that take their track from TrackEventDefaults
  std::map<std::uint64_t, Descriptor> tracks;
  std::vector<Slice> slices;  // in BEGIN order, instants included
  std::vector<CounterPoint> counters;
};

/// The incremental state of one packet sequence.
struct SequenceState {
  std::map<std::uint64_t, std::string> names, categories, keys, values;
  bool valid = false;
  std::set<std::uint64_t> described;                                        // tracks described since the last reset
  std::uint64_t clock = 0;                                                  // TracePacketDefaults.timestamp_clock_id
  std::uint64_t default_track = 0;                                          // TrackEventDefaults.track_uuid
  std::vector<std::uint64_t> int_counter_tracks, double_counter_tracks;     // its extra counter track lists
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> span_ids;  // category -> (last id, stride)
  std::map<std::string, std::map<std::string, Value>> kernel_tags;  // category -> its last slice's repeated tags
  struct Clock {
    bool incremental = false;
    std::int64_t last = 0, offset = 0;  // its last value; host clock minus it at its snapshot
  };
  std::map<std::uint64_t, Clock> clocks;  // sequence-scoped clocks (64-127)
};

Decoded read_pftrace(const std::string& file) {
  Decoded d;
  std::map<std::uint64_t, SequenceState> sequences;
  std::map<std::uint64_t, std::vector<std::size_t>> open;  // track -> open slice indexes
  std::map<std::uint64_t, std::int64_t> last_end;
  std::int64_t last_ts = 0;
  const auto resolve = [](const std::map<std::uint64_t, std::string>& table, std::uint64_t iid) {
    const auto it = table.find(iid);
    if (it == table.end()) ADD_FAILURE() << "unresolved iid " << iid;
    return it == table.end() ? std::string("?") : it->second;
  };
  for (const Field& p : decode(file)) {
    EXPECT_EQ(p.number, 1u);
    EXPECT_EQ(p.wire_type, 2u);
    ++d.packets;
    const std::vector<Field> packet = decode(p.bytes);
    const std::uint64_t seq_id = value_of(packet, 10);
    EXPECT_GE(seq_id, 1u) << "trusted_packet_sequence_id";
    d.sequences.insert(seq_id);
    SequenceState& seq = sequences[seq_id];
    auto &names = seq.names, &categories = seq.categories, &keys = seq.keys, &values = seq.values;
    auto& described = seq.described;
    const std::uint64_t flags = value_of(packet, 13);
    if (flags & 1) {
      ++d.resets;
      std::map<std::uint64_t, SequenceState::Clock> clocks = std::move(seq.clocks);
      seq = SequenceState{};
      seq.clocks = std::move(clocks);  // clocks are not incremental state: the next ClockSnapshot restarts them
      seq.valid = true;
    }
    if (flags & 2) EXPECT_TRUE(seq.valid) << "packet " << d.packets << " needs state before any reset";
    if (const Field* defaults = first(packet, 59)) {
      const std::vector<Field> f = decode(defaults->bytes);
      seq.clock = d.default_clock = value_of(f, 58);
      seq.default_track = 0;
      seq.int_counter_tracks.clear();
      seq.double_counter_tracks.clear();
      if (const Field* te = first(f, 11)) {
        for (const Field& x : decode(te->bytes)) {
          if (x.number == 11) seq.default_track = x.value;
          if (x.number == 31) seq.int_counter_tracks.push_back(x.value);
          if (x.number == 45) seq.double_counter_tracks.push_back(x.value);
        }
      }
    }
    if (const Field* interned = first(packet, 12)) {
      for (const Field& e : decode(interned->bytes)) {
        const std::vector<Field> entry = decode(e.bytes);
        const std::uint64_t iid = value_of(entry, 1);
        const std::string name = first(entry, 2) ? first(entry, 2)->bytes : "";
        auto& table = e.number == 1 ? categories : e.number == 2 ? names : e.number == 3 ? keys : values;
        EXPECT_FALSE(table.contains(iid)) << "iid " << iid << " interned twice in one generation";
        table[iid] = name;
        if (e.number == 2) ++d.interned_name_entries;
        if (e.number == 29) ++d.interned_values[name];
      }
    }
    if (const Field* snapshot = first(packet, 6)) {
      const std::vector<Field> f = decode(snapshot->bytes);
      if (d.packets == 1) d.primary_clock = value_of(f, 2);
      std::int64_t host = -1;
      for (const Field& c : f) {
        if (c.number == 1 && value_of(decode(c.bytes), 1) == d.primary_clock)
          host = static_cast<std::int64_t>(value_of(decode(c.bytes), 2));
      }
      EXPECT_GE(host, 0) << "a ClockSnapshot without the trace clock";
      for (const Field& c : f) {
        if (c.number != 1) continue;
        const std::vector<Field> clock = decode(c.bytes);
        const std::uint64_t id = value_of(clock, 1);
        if (id < 64 || id >= 128) continue;
        const auto ts = static_cast<std::int64_t>(value_of(clock, 2));
        seq.clocks[id] = {value_of(clock, 3) != 0, ts, host - ts};
      }
    }
    if (const Field* td = first(packet, 60)) {
      const std::vector<Field> f = decode(td->bytes);
      Descriptor desc;
      desc.uuid = value_of(f, 1);
      desc.parent_uuid = value_of(f, 5);
      if (const Field* n = first(f, 2)) desc.name = n->bytes;
      if (const Field* pr = first(f, 3)) {
        const auto pf = decode(pr->bytes);
        desc.is_process = true;
        desc.pid = static_cast<std::int64_t>(value_of(pf, 1));
        if (const Field* n = first(pf, 6)) desc.process_name = n->bytes;
      }
      if (const Field* th = first(f, 4)) {
        const auto tf = decode(th->bytes);
        desc.is_thread = true;
        desc.pid = static_cast<std::int64_t>(value_of(tf, 1));
        desc.tid = static_cast<std::int64_t>(value_of(tf, 2));
        if (const Field* n = first(tf, 5)) desc.thread_name = n->bytes;
      }
      desc.is_counter = first(f, 8) != nullptr;
      if (desc.parent_uuid != 0) EXPECT_TRUE(described.contains(desc.parent_uuid)) << "parent described after child";
      d.tracks[desc.uuid] = desc;
      described.insert(desc.uuid);
    }
    if (const Field* te = first(packet, 11)) {
      const std::vector<Field> f = decode(te->bytes);
      // A timestamp on an incremental clock is the delta from the previous one on it.
      auto ts = static_cast<std::int64_t>(value_of(packet, 8));
      if (seq.clock != 0 && seq.clock != d.primary_clock) {
        EXPECT_TRUE(seq.clocks.contains(seq.clock)) << "timestamp on clock " << seq.clock << " with no snapshot";
        SequenceState::Clock& c = seq.clocks[seq.clock];
        if (c.incremental) {
          c.last += ts;
          ts = c.last + c.offset;
        } else {
          ts += c.offset;
        }
      }
      EXPECT_GE(ts, last_ts) << "packets out of timestamp order";
      last_ts = ts;
      EXPECT_TRUE(flags & 2) << "a track event without SEQ_NEEDS_INCREMENTAL_STATE";
      if (!first(f, 11)) {
        ++d.events_without_track_uuid;
        EXPECT_NE(seq.default_track, 0u) << "an event without track_uuid nor default track";
      }
      const std::uint64_t type = value_of(f, 9), track = value_of(f, 11, seq.default_track);
      // Descriptors are re-sent after every reset, so a reader that starts at one still knows every track.
      EXPECT_TRUE(described.contains(track)) << "event on a track not described since the last reset";
      // Extra counter values: the Nth of each list for the Nth track of the sequence's default list.
      std::size_t extra_ints = 0, extra_doubles = 0;
      bool zero_seen = false;
      for (const std::uint32_t number : {12u, 46u}) {
        for (const Field& c : f) {
          if (c.number != number) continue;
          const bool is_int = c.number == 12;
          const std::vector<std::uint64_t>& list = is_int ? seq.int_counter_tracks : seq.double_counter_tracks;
          std::size_t& n = is_int ? extra_ints : extra_doubles;
          EXPECT_LT(n, list.size()) << "an extra counter value without a default track";
          if (n >= list.size()) continue;
          double v;
          if (is_int) {
            v = static_cast<double>(static_cast<std::int64_t>(c.value));
          } else {
            std::memcpy(&v, &c.value, sizeof v);
          }
          // trace_processor reads an event's extra values after its first 0 as 0 (integers first, then doubles).
          EXPECT_FALSE(zero_seen && v != 0) << "a non-zero extra counter value after a zero";
          zero_seen = zero_seen || v == 0;
          EXPECT_TRUE(described.contains(list[n]) && d.tracks.at(list[n]).is_counter);
          d.counters.push_back({list[n], ts, v, is_int, true, value_of(f, 9) != 4});
          ++n;
        }
      }
      d.max_extra_counters = std::max(d.max_extra_counters, extra_ints + extra_doubles);
      if (type == 1 || type == 3) {
        Slice s;
        s.track = track;
        s.start_ns = ts;
        s.name = resolve(names, value_of(f, 10));
        for (const Field& c : f) {
          if (c.number == 3) s.category = resolve(categories, c.value);
          if (c.number == 47) s.flow_ids.push_back(c.value);
          if (c.number == 48) s.terminating_flow_ids.push_back(c.value);
          if (c.number != 4) continue;
          const std::vector<Field> a = decode(c.bytes);
          const std::string key = resolve(keys, value_of(a, 1));
          Value v;
          if (const Field* i = first(a, 4)) v = static_cast<std::int64_t>(i->value);
          if (const Field* x = first(a, 5)) {
            double dv;
            std::memcpy(&dv, &x->value, sizeof dv);
            v = dv;
          }
          if (const Field* str = first(a, 6)) v = str->bytes;
          if (const Field* iid = first(a, 17)) v = resolve(values, iid->value);
          std::vector<std::int64_t> list;
          for (const Field& e : a) {
            if (e.number == 12) list.push_back(static_cast<std::int64_t>(value_of(decode(e.bytes), 4)));
          }
          if (!list.empty()) v = list;
          s.args[key] = v;
        }
        if (type == 1 && s.category != "xsp_metadata") {
          // A left-out span id continues the ids of its category on this sequence: last + (last - the one before).
          const auto run = seq.span_ids.find(s.category);
          std::uint64_t id = 0;
          if (const auto a = s.args.find("xsp.span_id"); a != s.args.end()) {
            id = static_cast<std::uint64_t>(std::get<std::int64_t>(a->second));
          } else if (run != seq.span_ids.end()) {
            id = run->second.first + run->second.second;
            s.args["xsp.span_id"] = static_cast<std::int64_t>(id);
            s.span_id_implied = true;
          } else {
            ADD_FAILURE() << "the first " << s.category << " slice of a generation without xsp.span_id";
          }
          seq.span_ids[s.category] = {id, run == seq.span_ids.end() ? 1 : id - run->second.first};
        }
        if (type == 1 && (s.category == "kernel" || s.category == "gpu_memcpy" || s.category == "gpu_memset")) {
          // The repeated kernel tags a device activity leaves out are its category's previous slice's, less those
          // "xsp.unset" names.
          std::set<std::string> unset;
          if (const auto u = s.args.find("xsp.unset"); u != s.args.end()) {
            std::istringstream keys_in(std::get<std::string>(u->second));
            for (std::string key; std::getline(keys_in, key, ',');) unset.insert(key);
            s.args.erase(u);
          }
          for (const auto& [key, value] : seq.kernel_tags[s.category]) {
            if (!s.args.contains(key) && !unset.contains(key)) {
              s.args[key] = value;
              s.tags_implied.insert(key);
            }
          }
          std::map<std::string, Value>& last = seq.kernel_tags[s.category];
          last.clear();
          for (const char* key : {"kind", "device", "context", "stream"}) {
            if (s.args.contains(key)) last[key] = s.args.at(key);
          }
        }
        // A slice with a flow whose "correlation" is left out has its flow id's low 32 bits.
        const std::vector<std::uint64_t>& flow = s.flow_ids.empty() ? s.terminating_flow_ids : s.flow_ids;
        if (type == 1 && !flow.empty() && !s.args.contains("correlation")) {
          s.args["correlation"] = static_cast<std::int64_t>(flow.front() & 0xffffffffu);
          s.correlation_implied = true;
        }
        s.depth = static_cast<int>(open[track].size());
        if (type == 3) {
          s.end_ns = ts;
        } else {
          open[track].push_back(d.slices.size());
        }
        d.slices.push_back(std::move(s));
      } else if (type == 2) {
        EXPECT_FALSE(open[track].empty()) << "END without BEGIN on track " << track;
        if (open[track].empty()) continue;
        Slice& s = d.slices[open[track].back()];
        open[track].pop_back();
        s.end_ns = ts;
        EXPECT_GE(ts, s.start_ns);
        EXPECT_GE(ts, last_end[track]) << "END timestamps decrease on track " << track;
        last_end[track] = ts;
      } else if (type == 4) {
        double v = 0;
        const Field* x = first(f, 44);
        const Field* i = first(f, 30);
        EXPECT_TRUE((x != nullptr) != (i != nullptr)) << "a counter event needs one value";
        if (x) std::memcpy(&v, &x->value, sizeof v);
        if (i) v = static_cast<double>(static_cast<std::int64_t>(i->value));
        d.counters.push_back({track, ts, v, i != nullptr, false, false});
        ++d.counter_events;
      }
    }
  }
  for (const auto& [track, stack] : open) EXPECT_TRUE(stack.empty()) << "unclosed slices on track " << track;
  return d;
}

std::string write(const std::vector<Span>& spans, PerfettoOptions options = {}, TraceResource resource = {},
                  std::vector<TraceProcess> processes = {}) {
  std::ostringstream out;
  PerfettoWriter w(out, resource, ClockInfo{}, std::move(processes), options);
  for (const Span& s : spans) w.add(s);
  w.finish();
  EXPECT_EQ(w.bytes_written(), out.str().size());
  EXPECT_EQ(w.spans_written(), spans.size());
  return out.str();
}

const Slice& slice_named(const Decoded& d, const std::string& name) {
  for (const Slice& s : d.slices) {
    if (s.name == name) return s;
  }
  static const Slice none;
  ADD_FAILURE() << "no slice " << name;
  return none;
}

std::size_t span_slices(const Decoded& d) {
  std::size_t n = 0;
  for (const Slice& s : d.slices) n += s.category != "xsp_metadata";
  return n;
}

TEST(PerfettoTrace, NestedSpansStayOnTheirThreadTrackWithTheirDepth) {
  std::vector<Span> spans = {make_span(1, Level::kModel, 1000, 2000, 7), make_span(2, Level::kFramework, 1100, 1500, 7),
                             make_span(3, Level::kLibrary, 1200, 1300, 7),
                             make_span(4, Level::kFramework, 1500, 1900, 7)};
  TraceResource res;
  res.service_name = "xsp-test";
  res.host_name = "node7";
  const Decoded d = read_pftrace(write(spans, {}, res));
  EXPECT_EQ(d.primary_clock, 3u);   // BUILTIN_CLOCK_MONOTONIC: the host clock is the trace's clock
  EXPECT_EQ(d.default_clock, 64u);  // the sequences' incremental clock
  ASSERT_EQ(span_slices(d), 4u);
  const Slice &a = slice_named(d, "model#1"), &b = slice_named(d, "framework#2"), &c = slice_named(d, "library#3"),
              &e = slice_named(d, "framework#4");
  EXPECT_EQ(a.track, b.track);
  EXPECT_EQ(a.track, c.track);
  EXPECT_EQ(a.track, e.track);
  EXPECT_EQ(a.depth, 0);
  EXPECT_EQ(b.depth, 1);
  EXPECT_EQ(c.depth, 2);
  EXPECT_EQ(e.depth, 1);  // 2 ended at 1500, where 4 starts
  EXPECT_EQ(b.start_ns, 1100);
  EXPECT_EQ(b.end_ns, 1500);
  EXPECT_EQ(a.end_ns, 2000);
  EXPECT_EQ(a.category, "user_annotation");
  EXPECT_EQ(b.category, "cpu_op");
  const Descriptor& thread = d.tracks.at(a.track);
  EXPECT_TRUE(thread.is_thread);
  EXPECT_EQ(thread.tid, 7);
  EXPECT_EQ(thread.pid, kChromeHostPid);
  EXPECT_EQ(thread.thread_name, "thread 7");
  bool host_named = false;
  for (const auto& [uuid, t] : d.tracks)
    host_named |= t.is_process && t.pid == kChromeHostPid && t.process_name == "xsp-test on node7";
  EXPECT_TRUE(host_named);
  // The resource instant carries the service name.
  EXPECT_EQ(std::get<std::string>(slice_named(d, "xsp.resource").args.at("service.name")), "xsp-test");
}

TEST(PerfettoTrace, PartialOverlapGoesToASiblingTrackUnderTheSameProcess) {
  std::vector<Span> spans = {make_span(1, Level::kFramework, 0, 100, 7), make_span(2, Level::kFramework, 50, 150, 7),
                             make_span(3, Level::kFramework, 60, 70, 7), make_span(4, Level::kFramework, 120, 130, 7)};
  const Decoded d = read_pftrace(write(spans));
  const Slice &a = slice_named(d, "framework#1"), &b = slice_named(d, "framework#2"),
              &c = slice_named(d, "framework#3"), &e = slice_named(d, "framework#4");
  EXPECT_NE(a.track, b.track);
  const Descriptor& sibling = d.tracks.at(b.track);
  EXPECT_EQ(sibling.name, "thread 7 (overlap 1)");
  ASSERT_TRUE(d.tracks.contains(sibling.parent_uuid));
  const Descriptor& parent = d.tracks.at(sibling.parent_uuid);
  EXPECT_TRUE(parent.is_process);
  EXPECT_EQ(parent.pid, d.tracks.at(a.track).pid);
  // 3 nests in 1 (the innermost open slice on the thread's own track), 4 starts after 1 ended: back on the thread.
  EXPECT_EQ(c.track, a.track);
  EXPECT_EQ(c.depth, 1);
  EXPECT_EQ(e.track, a.track);
  EXPECT_EQ(e.depth, 0);
  EXPECT_EQ(b.end_ns, 150);
}

TEST(PerfettoTrace, FlowsStepFromALaunchThroughEachOfItsDeviceActivities) {
  Span launch = make_span(1, Level::kSystem, 100, 200, 7, kNoSpan, 42);
  launch.name = "cudaLaunchKernel";
  Span kernel = make_span(2, Level::kKernel, 300, 400, 0, kNoSpan, 42);
  kernel.track = Track::stream(0, 7);
  kernel.tags = {
      {"kind", "kernel"}, {"grid", {128, 2, 1}}, {"achieved_occupancy", 0.625}, {"registers_per_thread", 32}};
  Span second = make_span(3, Level::kKernel, 450, 500, 0, kNoSpan, 42);  // same graph launch: the chain goes on
  second.track = Track::stream(0, 7);
  Span memcpy_span = make_span(4, Level::kKernel, 450, 460, 0, kNoSpan, 0);
  memcpy_span.track = Track::stream(0, 8);
  memcpy_span.tags = {{"kind", "memcpy"}};
  TraceResource res;
  res.device_names = {{0, "NVIDIA H100"}};
  const Decoded d = read_pftrace(write({launch, kernel, memcpy_span, second}, {}, res));
  const Slice &l = slice_named(d, "cudaLaunchKernel"), &k = slice_named(d, "kernel#2"),
              &k2 = slice_named(d, "kernel#3");
  ASSERT_EQ(l.flow_ids.size(), 1u);
  EXPECT_TRUE(l.terminating_flow_ids.empty());
  EXPECT_EQ(k.flow_ids, l.flow_ids);  // launch -> kernel#2 -> kernel#3, never terminated
  EXPECT_EQ(k2.flow_ids, l.flow_ids);
  EXPECT_TRUE(k.terminating_flow_ids.empty());
  EXPECT_TRUE(k2.terminating_flow_ids.empty());
  EXPECT_TRUE(slice_named(d, "kernel#4").flow_ids.empty());  // no correlation id: no flow
  EXPECT_EQ(l.category, "cuda_runtime");
  EXPECT_EQ(k.category, "kernel");
  EXPECT_EQ(slice_named(d, "kernel#4").category, "gpu_memcpy");
  EXPECT_EQ(std::get<std::int64_t>(k.args.at("correlation")), 42);
  EXPECT_EQ(std::get<std::int64_t>(k.args.at("xsp.span_id")), 2);
  EXPECT_FALSE(k.args.contains("xsp.level"));  // category "kernel" says it
  EXPECT_EQ(std::get<std::vector<std::int64_t>>(k.args.at("grid")), (std::vector<std::int64_t>{128, 2, 1}));
  EXPECT_DOUBLE_EQ(std::get<double>(k.args.at("achieved_occupancy")), 0.625);
  EXPECT_EQ(std::get<std::int64_t>(k.args.at("registers_per_thread")), 32);
  EXPECT_EQ(std::get<std::string>(k.args.at("kind")), "kernel");
  // The stream is a named track under the GPU's process, named as in the Chrome export.
  const Descriptor& stream = d.tracks.at(k.track);
  EXPECT_EQ(stream.name, "stream 7");
  const Descriptor& gpu = d.tracks.at(stream.parent_uuid);
  EXPECT_TRUE(gpu.is_process);
  EXPECT_EQ(gpu.process_name, "GPU 0: NVIDIA H100");
  EXPECT_EQ(gpu.pid, kPerfettoGpuPidBase);
  EXPECT_NE(d.tracks.at(slice_named(d, "kernel#4").track).uuid, stream.uuid);
}

TEST(PerfettoTrace, FlowIdsDifferAcrossProcessesWithTheSameCorrelationId) {
  const std::vector<TraceProcess> processes = {{100, "python a.py", {7}}, {200, "python b.py", {8}}};
  Span l1 = make_span(1, Level::kSystem, 100, 200, 7, kNoSpan, 5);
  Span l2 = make_span(2, Level::kSystem, 110, 210, 8, kNoSpan, 5);
  Span k1 = make_span(3, Level::kKernel, 300, 400, 0, kNoSpan, 5);
  k1.track = Track::stream(0, 7, 1);
  Span k2 = make_span(4, Level::kKernel, 310, 410, 0, kNoSpan, 5);
  k2.track = Track::stream(0, 7, 2);
  const Decoded d = read_pftrace(write({l1, l2, k1, k2}, {}, {}, processes));
  const Slice &a = slice_named(d, "system#1"), &b = slice_named(d, "system#2");
  ASSERT_EQ(a.flow_ids.size(), 1u);
  ASSERT_EQ(b.flow_ids.size(), 1u);
  EXPECT_NE(a.flow_ids, b.flow_ids);
  EXPECT_EQ(slice_named(d, "kernel#3").flow_ids, a.flow_ids);
  EXPECT_EQ(slice_named(d, "kernel#4").flow_ids, b.flow_ids);
  EXPECT_EQ(d.tracks.at(a.track).pid, 100);
  EXPECT_EQ(d.tracks.at(b.track).pid, 200);
  EXPECT_EQ(d.tracks.at(slice_named(d, "kernel#4").track).name, "stream 7 of process 200");
  EXPECT_NE(slice_named(d, "kernel#3").track, slice_named(d, "kernel#4").track);
}

TEST(PerfettoTrace, InAOneProcessTraceStreamsOfProcessZeroJoinTheLaunchingThreadsFlows) {
  // xsp profile of one command: its thread is listed in processes[0], its streams say process 0 ("the only one").
  const std::vector<TraceProcess> processes = {{1515, "python3 graph_program.py", {7}}};
  Span l = make_span(1, Level::kSystem, 100, 200, 7, kNoSpan, 150);
  Span k = make_span(2, Level::kKernel, 300, 400, 0, kNoSpan, 150);
  k.track = Track::stream(0, 7);
  const Decoded d = read_pftrace(write({l, k}, {}, {}, processes));
  ASSERT_EQ(slice_named(d, "system#1").flow_ids.size(), 1u);
  EXPECT_EQ(slice_named(d, "kernel#2").flow_ids, slice_named(d, "system#1").flow_ids);
  EXPECT_EQ(d.tracks.at(slice_named(d, "system#1").track).pid, 1515);
  EXPECT_EQ(d.tracks.at(slice_named(d, "kernel#2").track).name, "stream 7");
}

TEST(PerfettoTrace, InterningRestartsAtEveryReset) {
  std::vector<Span> spans;
  for (SpanId i = 1; i <= 40; ++i) {
    Span s =
        make_span(i, Level::kFramework, static_cast<std::int64_t>(i) * 10, static_cast<std::int64_t>(i) * 10 + 5, 1);
    s.name = "aten::add";
    s.tags = {{"op_kind", "pointwise"}};
    spans.push_back(s);
  }
  PerfettoOptions options;
  options.reset_interval_packets = 10;
  const std::string file = write(spans, options);
  const Decoded d = read_pftrace(file);  // resolves every iid within its generation, or fails
  EXPECT_EQ(span_slices(d), 40u);
  EXPECT_GE(d.resets, d.packets / 10);
  // "aten::add" is interned once per generation that uses it, never once per span.
  EXPECT_GT(d.interned_name_entries, 2u);
  EXPECT_LT(d.interned_name_entries, 20u);
  for (const Slice& s : d.slices) {
    if (s.category == "xsp_metadata") continue;
    EXPECT_EQ(s.name, "aten::add");
    EXPECT_EQ(std::get<std::string>(s.args.at("op_kind")), "pointwise");
  }
  // Without resets past each sequence's first, the name is interned once.
  const Decoded once = read_pftrace(write(spans));
  EXPECT_EQ(once.resets, once.sequences.size());
  EXPECT_EQ(once.sequences.size(), 2u);       // the process track's (xsp.resource) and the thread's
  EXPECT_EQ(once.interned_name_entries, 2u);  // "aten::add" and "xsp.resource" (no counters: no xsp.counters)
  // The repeated tag value likewise: once per generation, each span naming it by its iid.
  EXPECT_EQ(once.interned_values.at("pointwise"), 1u);
  EXPECT_GT(d.interned_values.at("pointwise"), 2u);
  EXPECT_LT(d.interned_values.at("pointwise"), 20u);
}

TEST(PerfettoTrace, RandomSpansKeepTheirTimesAndNestOnEveryTrack) {
  // Random intervals on three host threads and two streams, many of them overlapping or ending together; the decoder
  // fails on any END out of order, unbalanced slice or packet out of timestamp order.
  std::mt19937_64 rng(29);
  std::vector<Span> spans;
  for (SpanId id = 1; id <= 3000; ++id) {
    const std::int64_t start = static_cast<std::int64_t>(rng() % 20'000);
    const std::int64_t length = rng() % 4 == 0 ? 0 : static_cast<std::int64_t>(rng() % 2'000);
    const auto level = static_cast<Level>(rng() % 6);
    Span s = make_span(id, level, start, start + length, 1 + rng() % 3);
    if (rng() % 3 == 0) s.track = Track::stream(static_cast<std::uint32_t>(rng() % 2), 7);
    spans.push_back(s);
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    if (a.level != b.level) return a.level < b.level;
    if (a.end_ns != b.end_ns) return a.end_ns > b.end_ns;
    return a.id < b.id;
  });
  PerfettoOptions options;
  options.reset_interval_packets = 97;
  const Decoded d = read_pftrace(write(spans, options));
  std::map<SpanId, const Slice*> by_id;
  for (const Slice& s : d.slices) {
    if (s.category != "xsp_metadata") by_id[std::get<std::int64_t>(s.args.at("xsp.span_id"))] = &s;
  }
  ASSERT_EQ(by_id.size(), spans.size());
  for (const Span& s : spans) {
    const Slice& slice = *by_id.at(s.id);
    EXPECT_EQ(slice.start_ns, s.start_ns) << s.id;
    EXPECT_EQ(slice.end_ns, s.end_ns) << s.id;
    EXPECT_EQ(slice.name, s.name);
    // On the span's own track or one of its overlap siblings, which hang under the same process.
    const Descriptor& track = d.tracks.at(slice.track);
    if (s.track.is_device()) {
      EXPECT_TRUE(track.name.starts_with("stream 7")) << track.name;
    } else if (!track.is_thread) {
      EXPECT_TRUE(track.name.starts_with("thread " + std::to_string(s.track.id) + " (overlap ")) << track.name;
    } else {
      EXPECT_EQ(track.tid, static_cast<std::int64_t>(s.track.id));
    }
  }
}

TEST(PerfettoTrace, HardwareCountersGetACounterTrackPerGpuAndName) {
  Span kernel = make_span(1, Level::kKernel, 100, 200, 0);
  kernel.track = Track::stream(0, 7);
  Span hw = make_span(2, Level::kHardware, 100, 200, 0, 1);
  hw.track = Track::stream(0, 7);
  hw.tags = {{"dram_read_bytes", 4096.0}, {"range_index", 0}, {"replay", "kernel"}};
  Span hw2 = make_span(3, Level::kHardware, 300, 400, 3);  // on a host thread: the run's only GPU
  hw2.tags = {{"dram_read_bytes", std::int64_t{8192}}};
  TraceResource res;
  res.device_names = {{0, "NVIDIA H100"}};
  const Decoded d = read_pftrace(write({kernel, hw, hw2}, {}, res));
  ASSERT_EQ(d.counters.size(), 2u);
  EXPECT_EQ(d.counters[0].track, d.counters[1].track);
  EXPECT_EQ(d.counters[0].ts_ns, 100);
  EXPECT_DOUBLE_EQ(d.counters[0].value, 4096.0);
  EXPECT_TRUE(d.counters[0].is_int);    // a real tag without a fraction: an integer on the wire
  EXPECT_TRUE(d.counters[0].on_slice);  // an extra counter value of the span's BEGIN
  EXPECT_EQ(d.counters[1].ts_ns, 300);
  EXPECT_DOUBLE_EQ(d.counters[1].value, 8192.0);
  EXPECT_TRUE(d.counters[1].is_int);
  EXPECT_EQ(d.counter_events, 0u);  // no TYPE_COUNTER event of its own
  // The values are on the counter tracks only; the other tags stay on the slice.
  const Slice& h = slice_named(d, "hardware#2");
  EXPECT_FALSE(h.args.contains("dram_read_bytes"));
  EXPECT_EQ(std::get<std::int64_t>(h.args.at("range_index")), 0);
  EXPECT_EQ(std::get<std::string>(h.args.at("replay")), "kernel");
  EXPECT_FALSE(slice_named(d, "hardware#3").args.contains("dram_read_bytes"));
  const Descriptor& counter = d.tracks.at(d.counters[0].track);
  EXPECT_TRUE(counter.is_counter);
  EXPECT_EQ(counter.name, "dram_read_bytes");
  EXPECT_EQ(d.tracks.at(counter.parent_uuid).process_name, "GPU 0: NVIDIA H100");
  // The HARDWARE spans are slices too (the span count stays the store's).
  EXPECT_EQ(span_slices(d), 3u);
  EXPECT_EQ(slice_named(d, "hardware#2").category, "cuda_profiler_range");
}

TEST(PerfettoTrace, SpansOutOfOrderOrEndingBeforeTheyStartAreRejectedByName) {
  std::ostringstream out;
  PerfettoWriter w(out, TraceResource{}, ClockInfo{});
  w.add(make_span(1, Level::kModel, 100, 200));
  try {
    w.add(make_span(2, Level::kModel, 50, 60));
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("span 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("span 1"), std::string::npos) << e.what();
  }
  try {
    w.add(make_span(3, Level::kModel, 300, 250));
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("span 3"), std::string::npos) << e.what();
  }
  w.add(make_span(4, Level::kModel, 300, 400));
  w.finish();
  EXPECT_THROW(w.add(make_span(5, Level::kModel, 500, 600)), std::logic_error);
  const Decoded d = read_pftrace(out.str());
  EXPECT_EQ(span_slices(d), 2u);  // rejected spans left nothing behind
}

TEST(PerfettoTrace, WriteTraceSortsAnUnorderedTraceAndWritesItsCounters) {
  Trace t;
  t.spans = {make_span(2, Level::kFramework, 150, 180, 1), make_span(1, Level::kModel, 100, 200, 1)};
  t.counters["cupti.dropped_records"] = 3;
  std::ostringstream out;
  write_perfetto_trace(out, t, TraceResource{});
  const Decoded d = read_pftrace(out.str());
  EXPECT_EQ(slice_named(d, "framework#2").depth, 1);
  const Slice& counters = slice_named(d, "xsp.counters");
  EXPECT_EQ(std::get<std::int64_t>(counters.args.at("cupti.dropped_records")), 3);
  EXPECT_EQ(counters.start_ns, 200);
  EXPECT_EQ(counters.category, "xsp_metadata");
}

TEST(PerfettoTrace, NonUtf8StringsAreReplacedAndCountedOrRejected) {
  Span s = make_span(9, Level::kModel, 100, 200);
  s.name = "bad\xff name";
  s.tags = {{"note", "\xc3"}};
  std::ostringstream out;
  PerfettoWriter w(out, TraceResource{}, ClockInfo{});
  w.add(s);
  w.finish();
  EXPECT_EQ(w.invalid_utf8_replaced(), 2u);
  const Decoded d = read_pftrace(out.str());
  EXPECT_EQ(slice_named(d, "bad\xef\xbf\xbd name").start_ns, 100);
  EXPECT_EQ(std::get<std::int64_t>(slice_named(d, "xsp.counters").args.at("perfetto.invalid_utf8_replaced")), 2);

  PerfettoOptions strict;
  strict.replace_invalid_utf8 = false;
  std::ostringstream out2;
  PerfettoWriter w2(out2, TraceResource{}, ClockInfo{}, {}, strict);
  Span good = make_span(8, Level::kModel, 50, 300);
  good.tags = {{"note", "fine"}};
  w2.add(good);
  s.name = "good name";  // only the tag is bad now: rejected before anything of it is interned
  try {
    w2.add(s);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("span 9"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("note"), std::string::npos) << e.what();
  }
  Span after = make_span(10, Level::kFramework, 150, 160);
  after.name = "good name";
  after.tags = {{"note", "fine"}};
  w2.add(after);
  w2.finish();
  const Decoded d2 = read_pftrace(out2.str());
  EXPECT_EQ(span_slices(d2), 2u);
  EXPECT_EQ(slice_named(d2, "good name").depth, 1);
}

/// What the writer put on the wire for each track-event packet, before any decoding: its sequence, its raw timestamp
/// field (a delta on an incremental clock), its event type and whether it names its track.
struct RawEvent {
  std::uint64_t seq = 0, ts = 0, type = 0;
  bool has_track_uuid = false;
  bool operator==(const RawEvent&) const = default;
};
/// Per sequence, the (host clock, clock 64, is_incremental) of each of its ClockSnapshots.
struct RawSnapshot {
  std::uint64_t seq = 0, host = 0, clock64 = 0;
  bool incremental = false;
};

std::vector<RawEvent> raw_events(const std::string& file, std::vector<RawSnapshot>* snapshots = nullptr) {
  std::vector<RawEvent> events;
  for (const Field& p : decode(file)) {
    const std::vector<Field> packet = decode(p.bytes);
    if (const Field* te = first(packet, 11)) {
      const std::vector<Field> f = decode(te->bytes);
      events.push_back({value_of(packet, 10), value_of(packet, 8), value_of(f, 9), first(f, 11) != nullptr});
    }
    if (const Field* cs = first(packet, 6); cs && snapshots) {
      RawSnapshot snap;
      snap.seq = value_of(packet, 10);
      for (const Field& c : decode(cs->bytes)) {
        if (c.number != 1) continue;
        const std::vector<Field> clock = decode(c.bytes);
        if (value_of(clock, 1) == 3) snap.host = value_of(clock, 2);
        if (value_of(clock, 1) == 64) {
          snap.clock64 = value_of(clock, 2);
          snap.incremental = value_of(clock, 3) != 0;
        }
      }
      snapshots->push_back(snap);
    }
  }
  return events;
}

TEST(PerfettoTrace, TimestampsAreDeltasOnEachTracksSequence) {
  // Known answer: two nested spans on thread 7, a kernel on a stream. Each track is a sequence whose default track it
  // is; each sequence's clock 64 starts at the latest timestamp written when it starts, and every event's timestamp
  // is the delta from the previous one on its sequence.
  Span a = make_span(1, Level::kFramework, 1000, 1500, 7);
  Span b = make_span(2, Level::kFramework, 1200, 1300, 7, 1);
  Span k = make_span(3, Level::kKernel, 1250, 1400, 0);
  k.track = Track::stream(0, 3);
  const std::string file = write({a, b, k});
  std::vector<RawSnapshot> snapshots;
  const std::vector<RawEvent> events = raw_events(file, &snapshots);
  const std::vector<RawEvent> want = {
      {1, 0, 3, false},    // xsp.resource at 1000 on the process track's sequence
      {2, 0, 1, false},    // BEGIN a at 1000: thread 7's sequence starts at 1000
      {2, 200, 1, false},  // BEGIN b at 1200
      {3, 50, 1, false},   // BEGIN k at 1250: the stream's sequence starts at 1200
      {2, 100, 2, false},  // END b at 1300
      {3, 150, 2, false},  // END k at 1400
      {2, 200, 2, false},  // END a at 1500
  };
  EXPECT_EQ(events, want);
  ASSERT_EQ(snapshots.size(), 3u);
  for (const RawSnapshot& s : snapshots) {
    EXPECT_TRUE(s.incremental);
    EXPECT_EQ(s.clock64, s.host);  // clock 64 ticks with the host clock
  }
  EXPECT_EQ(snapshots[0].host, 1000u);
  EXPECT_EQ(snapshots[1].host, 1000u);
  EXPECT_EQ(snapshots[2].host, 1200u);
  // Decoded as trace_processor does, the absolute times come back.
  const Decoded d = read_pftrace(file);
  EXPECT_EQ(d.sequences, (std::set<std::uint64_t>{1, 2, 3}));
  EXPECT_EQ(d.events_without_track_uuid, events.size());
  EXPECT_EQ(slice_named(d, "framework#2").start_ns, 1200);
  EXPECT_EQ(slice_named(d, "framework#2").end_ns, 1300);
  EXPECT_EQ(slice_named(d, "kernel#3").start_ns, 1250);
  EXPECT_EQ(slice_named(d, "kernel#3").end_ns, 1400);
  EXPECT_EQ(slice_named(d, "framework#1").end_ns, 1500);
}

TEST(PerfettoTrace, EachResetReanchorsTheIncrementalClock) {
  std::vector<Span> spans;
  for (SpanId i = 1; i <= 12; ++i) {
    spans.push_back(make_span(i, Level::kFramework, static_cast<std::int64_t>(i) * 100'000'000,
                              static_cast<std::int64_t>(i) * 100'000'000 + 50, 1));
  }
  PerfettoOptions options;
  options.reset_interval_packets = 4;
  const std::string file = write(spans, options);
  std::vector<RawSnapshot> snapshots;
  const std::vector<RawEvent> events = raw_events(file, &snapshots);
  // Thread 1's sequence resets several times; each reset starts with a ClockSnapshot at the latest timestamp, so no
  // delta is ever an absolute time (at most the 100 ms between spans).
  std::size_t thread_snapshots = 0;
  for (const RawSnapshot& s : snapshots) thread_snapshots += s.seq == 2;
  EXPECT_GE(thread_snapshots, 4u);
  for (const RawSnapshot& s : snapshots) {
    EXPECT_EQ(s.clock64, s.host);
    EXPECT_EQ(s.host % 50, 0u) << "anchored at a span's start or end";
  }
  for (const RawEvent& e : events) EXPECT_LE(e.ts, 100'000'000u);
  const Decoded d = read_pftrace(file);
  for (const Span& s : spans) {
    const Slice& slice = slice_named(d, s.name);
    EXPECT_EQ(slice.start_ns, s.start_ns);
    EXPECT_EQ(slice.end_ns, s.end_ns);
  }
}

TEST(PerfettoTrace, AnnotationsTheEventAlreadySaysAreLeftOut) {
  Span app = make_span(1, Level::kApplication, 0, 1000, 7);  // user_annotation, not MODEL: its level is written
  Span model = make_span(2, Level::kModel, 10, 900, 7, 1);
  model.parent_rule = ParentRule::kContext;  // level, parent (the enclosing slice) and rule all implied
  Span op = make_span(3, Level::kFramework, 20, 800, 7, 1);
  op.parent_rule = ParentRule::kContainment;  // its parent is not the enclosing slice (2): written
  Span launch = make_span(4, Level::kSystem, 30, 40, 7, 3, 9);
  launch.parent_rule = ParentRule::kContext;
  Span kernel = make_span(5, Level::kKernel, 50, 60, 0, 4, 9);  // its parent is on another track: written
  kernel.track = Track::stream(0, 7);
  kernel.parent_rule = ParentRule::kCorrelation;
  Span replayed = make_span(6, Level::kFramework, 70, 80, 0, 0);  // gpu_user_annotation: FRAMEWORK implied
  replayed.track = Track::stream(0, 7);
  replayed.parent_rule = ParentRule::kContext;
  Span memcpy_span = make_span(7, Level::kKernel, 90, 95, 0, 4);  // a parent elsewhere, by context: rule written
  memcpy_span.track = Track::stream(0, 7);
  memcpy_span.tags = {{"kind", "memcpy"}};
  memcpy_span.parent_rule = ParentRule::kContext;
  const Decoded d = read_pftrace(write({app, model, op, launch, kernel, replayed, memcpy_span}));
  const auto& a = slice_named(d, "application#1").args;
  EXPECT_EQ(std::get<std::string>(a.at("xsp.level")), "application");
  EXPECT_FALSE(a.contains("xsp.parent_id"));  // 0 at the top of its track
  EXPECT_EQ(std::get<std::string>(a.at("xsp.parent_rule")), "none");
  const auto& m = slice_named(d, "model#2").args;
  EXPECT_FALSE(m.contains("xsp.level"));
  EXPECT_FALSE(m.contains("xsp.parent_id"));
  EXPECT_FALSE(m.contains("xsp.parent_rule"));
  EXPECT_EQ(std::get<std::int64_t>(m.at("xsp.span_id")), 2);
  const auto& o = slice_named(d, "framework#3").args;
  EXPECT_FALSE(o.contains("xsp.level"));
  EXPECT_EQ(std::get<std::int64_t>(o.at("xsp.parent_id")), 1);
  EXPECT_EQ(std::get<std::string>(o.at("xsp.parent_rule")), "containment");
  const auto& l = slice_named(d, "system#4").args;
  EXPECT_FALSE(l.contains("xsp.level"));
  EXPECT_FALSE(l.contains("xsp.parent_id"));
  EXPECT_FALSE(l.contains("xsp.parent_rule"));
  EXPECT_EQ(std::get<std::int64_t>(l.at("correlation")), 9);
  const auto& k = slice_named(d, "kernel#5").args;
  EXPECT_FALSE(k.contains("xsp.level"));
  EXPECT_EQ(std::get<std::int64_t>(k.at("xsp.parent_id")), 4);
  EXPECT_FALSE(k.contains("xsp.parent_rule"));  // "correlation", the commonest for a parent on another track
  const Slice& r = slice_named(d, "framework#6");
  EXPECT_EQ(r.category, "gpu_user_annotation");
  EXPECT_FALSE(r.args.contains("xsp.level"));
  EXPECT_FALSE(r.args.contains("xsp.parent_id"));  // parent 0 and no enclosing slice
  const Slice& c = slice_named(d, "kernel#7");
  EXPECT_EQ(c.category, "gpu_memcpy");
  EXPECT_FALSE(c.args.contains("xsp.level"));
  EXPECT_EQ(std::get<std::string>(c.args.at("xsp.parent_rule")), "context");
}

TEST(PerfettoTrace, AHardwareSpanStartingWithAnotherKeepsItsCounterValuesAsAnnotations) {
  // Two HARDWARE spans on one GPU starting at the same ns: their values on one counter track at one time could not
  // be told apart, so the second also carries them.
  Span hw1 = make_span(1, Level::kHardware, 100, 200, 0);
  hw1.track = Track::stream(0, 7);
  hw1.tags = {{"fp32_flops", std::int64_t{10}}};
  Span hw2 = make_span(2, Level::kHardware, 100, 150, 0);
  hw2.track = Track::stream(0, 7);
  hw2.tags = {{"fp32_flops", std::int64_t{20}}};
  const Decoded d = read_pftrace(write({hw1, hw2}));
  ASSERT_EQ(d.counters.size(), 2u);
  EXPECT_FALSE(slice_named(d, "hardware#1").args.contains("fp32_flops"));
  EXPECT_EQ(std::get<std::int64_t>(slice_named(d, "hardware#2").args.at("fp32_flops")), 20);
}

TEST(PerfettoTrace, SpanIdsThatContinueTheirCategorysProgressionAreLeftOut) {
  // Known answer on one thread: ops 10, 11, 12 (steps of 1) interleaved with launches 100, 102, 104 (steps of 2), then
  // a launch 107 that breaks the progression. Each category's first slice and every break carry "xsp.span_id".
  Span op1 = make_span(10, Level::kFramework, 0, 1000, 7);
  Span l1 = make_span(100, Level::kSystem, 10, 20, 7, 10);
  Span op2 = make_span(11, Level::kFramework, 30, 100, 7, 10);
  Span l2 = make_span(102, Level::kSystem, 40, 50, 7, 11);
  Span op3 = make_span(12, Level::kFramework, 200, 300, 7, 10);
  Span l3 = make_span(104, Level::kSystem, 210, 220, 7, 12);
  Span l4 = make_span(107, Level::kSystem, 400, 410, 7, 10);
  for (Span* x : {&op1, &op2, &op3, &l1, &l2, &l3, &l4}) x->parent_rule = ParentRule::kContext;
  op1.parent_rule = ParentRule::kNone;
  const Decoded d = read_pftrace(write({op1, l1, op2, l2, op3, l3, l4}));
  const std::map<std::string, bool> implied = {{"framework#10", false}, {"system#100", false},  {"framework#11", true},
                                               {"system#102", false},   {"framework#12", true}, {"system#104", true},
                                               {"system#107", false}};
  for (const auto& [name, left_out] : implied) {
    const Slice& slice = slice_named(d, name);
    EXPECT_EQ(slice.span_id_implied, left_out) << name;
    // Rebuilt by the rule or written, the id is the span's.
    EXPECT_EQ(std::to_string(std::get<std::int64_t>(slice.args.at("xsp.span_id"))), name.substr(name.find('#') + 1));
  }
}

TEST(PerfettoTrace, CounterValuesRideOnTheBeginWithTheirTracksInTheDefaults) {
  // Known answer: 9 integral values (one a real without a fraction), one real, three zeros. trace_processor takes 8
  // extra values per event and reads those after a zero as 0: the BEGIN carries the first 8 integers, a TYPE_COUNTER
  // event at the same time carries the real as its own value and the ninth integer and the zeros as extra values.
  Span hw = make_span(1, Level::kHardware, 100, 200, 0);
  hw.track = Track::stream(0, 7);
  std::map<std::string, double> want;
  for (int k = 0; k < 9; ++k) {
    const std::string key = "c" + std::to_string(k);
    if (k == 4) {
      hw.tags.emplace_back(key, 4096.0);
    } else {
      hw.tags.emplace_back(key, std::int64_t{k + 1});
    }
    want[key] = k == 4 ? 4096.0 : k + 1;
  }
  hw.tags.emplace_back("z0", std::int64_t{0});
  hw.tags.emplace_back("occupancy", 0.625);
  hw.tags.emplace_back("z1", 0.0);
  hw.tags.emplace_back("z2", std::int64_t{0});
  hw.tags.emplace_back("range_index", std::int64_t{3});  // bookkeeping: an annotation
  want["z0"] = want["z1"] = want["z2"] = 0;
  want["occupancy"] = 0.625;
  // A second span whose zeros and values sit elsewhere: the default lists are written again in its order.
  Span hw2 = make_span(2, Level::kHardware, 300, 400, 0);
  hw2.track = Track::stream(0, 7);
  hw2.tags = {{"c0", std::int64_t{0}}, {"occupancy", 0.5}, {"c1", std::int64_t{7}}};
  TraceResource res;
  res.device_names = {{0, "NVIDIA H200"}};
  const Decoded d = read_pftrace(write({hw, hw2}, {}, res));
  std::map<std::string, double> got, got2;
  std::size_t on_begin = 0;
  for (const CounterPoint& c : d.counters) {
    const Descriptor& track = d.tracks.at(c.track);
    EXPECT_TRUE(track.is_counter);
    EXPECT_EQ(d.tracks.at(track.parent_uuid).process_name, "GPU 0: NVIDIA H200");
    auto& into = c.ts_ns == 100 ? got : got2;
    EXPECT_FALSE(into.contains(track.name)) << track.name << " twice";
    into[track.name] = c.value;
    if (c.ts_ns == 100) on_begin += c.on_slice;
    if (track.name == "occupancy") EXPECT_FALSE(c.is_int);
    if (track.name == "c4") EXPECT_TRUE(c.is_int);  // 4096.0: no fraction
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(got2, (std::map<std::string, double>{{"c0", 0}, {"occupancy", 0.5}, {"c1", 7}}));
  EXPECT_EQ(on_begin, 8u);
  // One for the rest of span 1's values; one for span 2's zero, which cannot follow the real on its BEGIN.
  EXPECT_EQ(d.counter_events, 2u);
  EXPECT_LE(d.max_extra_counters, 8u);
  const Slice& slice = slice_named(d, "hardware#1");
  EXPECT_EQ(std::get<std::int64_t>(slice.args.at("range_index")), 3);
  EXPECT_FALSE(slice.args.contains("c0"));
}

TEST(PerfettoTrace, KernelTagsThatRepeatThePreviousSlicesOfTheCategoryAreLeftOut) {
  // Known answer on one stream: the kind, device, context and stream of a device activity are left out where the
  // previous slice of its category on the sequence had the same (type and value); those it lacks though that slice
  // had them are named in "xsp.unset". Other tags are always written.
  const auto kernel = [](SpanId id, std::int64_t start, std::vector<Tag> tags) {
    Span k = make_span(id, Level::kKernel, start, start + 10, 0);
    k.track = Track::stream(0, 7);
    k.tags = std::move(tags);
    return k;
  };
  const std::vector<Tag> where = {{"kind", "kernel"}, {"device", 0}, {"context", 1}, {"stream", 7}};
  std::vector<Tag> k1 = where, k2 = where, k3 = where;
  k1.emplace_back("grid", "1,1,1");
  k2.emplace_back("grid", "2,1,1");                      // all four repeated; its own grid written
  k3[2] = Tag("context", 2);                             // a new context: written, the other three left out
  std::vector<Tag> k4 = {where[0], where[1], where[2]};  // context 1 again; no stream: "xsp.unset" says so
  std::vector<Tag> k5 = {where[0], {"device", "0"}, where[2], where[3]};  // device as text: written, stream written
  Span memcpy_span = kernel(6, 100, {{"kind", "memcpy"}, {"device", 0}, {"context", 2}, {"stream", 7}});
  const Decoded d = read_pftrace(write(
      {kernel(1, 0, k1), kernel(2, 20, k2), kernel(3, 40, k3), kernel(4, 60, k4), kernel(5, 80, k5), memcpy_span}));
  const std::map<std::string, std::set<std::string>> implied = {
      {"kernel#1", {}},
      {"kernel#2", {"kind", "device", "context", "stream"}},
      {"kernel#3", {"kind", "device", "stream"}},
      {"kernel#4", {"kind", "device"}},  // context 1 after 2: written
      {"kernel#5", {"kind", "context"}},
      {"kernel#6", {}}};  // the first gpu_memcpy slice: its category's own progression
  for (const auto& [name, keys] : implied) EXPECT_EQ(slice_named(d, name).tags_implied, keys) << name;
  // Rebuilt, every slice has exactly its span's tags.
  const auto tags_of = [](const Slice& s) {
    std::map<std::string, Value> t = s.args;
    std::erase_if(t, [](const auto& kv) { return kv.first.starts_with("xsp."); });
    return t;
  };
  EXPECT_EQ(tags_of(slice_named(d, "kernel#2")), (std::map<std::string, Value>{{"kind", std::string("kernel")},
                                                                               {"device", std::int64_t{0}},
                                                                               {"context", std::int64_t{1}},
                                                                               {"stream", std::int64_t{7}},
                                                                               {"grid", std::string("2,1,1")}}));
  EXPECT_EQ(std::get<std::int64_t>(slice_named(d, "kernel#3").args.at("context")), 2);
  EXPECT_FALSE(slice_named(d, "kernel#4").args.contains("stream"));
  EXPECT_EQ(std::get<std::string>(slice_named(d, "kernel#5").args.at("device")), "0");
  EXPECT_EQ(std::get<std::int64_t>(slice_named(d, "kernel#5").args.at("stream")), 7);
  EXPECT_EQ(std::get<std::string>(slice_named(d, "kernel#6").args.at("kind")), "memcpy");
}

TEST(PerfettoTrace, CorrelationIsLeftOutWhereTheFlowIdHoldsIt) {
  // Known answer: a flow id is (process position + 1) << 32 | correlation id for correlation ids below 2^32, so the
  // launch and every kernel its flow steps through leave "correlation" out; a launch with a 64-bit correlation id (a
  // mixed flow id) writes it.
  Span launch = make_span(1, Level::kSystem, 100, 200, 7, kNoSpan, 9);
  Span k1 = make_span(2, Level::kKernel, 300, 400, 0, 1, 9);
  k1.track = Track::stream(0, 7);
  Span k2 = make_span(3, Level::kKernel, 400, 450, 0, 1, 9);
  k2.track = Track::stream(0, 7);
  Span wide = make_span(4, Level::kSystem, 500, 600, 7, kNoSpan, std::uint64_t{1} << 40);
  const Decoded d = read_pftrace(write({launch, k1, k2, wide}));
  const Slice &l = slice_named(d, "system#1"), &a = slice_named(d, "kernel#2"), &b = slice_named(d, "kernel#3"),
              &w = slice_named(d, "system#4");
  EXPECT_EQ(l.flow_ids, (std::vector<std::uint64_t>{(std::uint64_t{1} << 32) | 9}));
  EXPECT_EQ(a.flow_ids, l.flow_ids);
  EXPECT_EQ(b.flow_ids, l.flow_ids);
  EXPECT_TRUE(l.correlation_implied);
  EXPECT_TRUE(a.correlation_implied);
  EXPECT_TRUE(b.correlation_implied);
  EXPECT_FALSE(w.correlation_implied);
  EXPECT_EQ(std::get<std::int64_t>(l.args.at("correlation")), 9);
  EXPECT_EQ(std::get<std::int64_t>(a.args.at("correlation")), 9);
  EXPECT_EQ(std::get<std::int64_t>(b.args.at("correlation")), 9);
  EXPECT_EQ(std::get<std::int64_t>(w.args.at("correlation")), std::int64_t{1} << 40);
  ASSERT_EQ(w.flow_ids.size(), 1u);
  EXPECT_NE(w.flow_ids[0] & 0xffffffffu, 0u);  // mixed: its low bits are not the correlation id's
  // Two processes: the same correlation id, flow ids apart by their high bits.
  const std::vector<TraceProcess> processes = {{100, "python a.py", {7}}, {200, "python b.py", {8}}};
  Span p1 = make_span(5, Level::kSystem, 100, 200, 7, kNoSpan, 5);
  Span p2 = make_span(6, Level::kSystem, 110, 210, 8, kNoSpan, 5);
  const Decoded two = read_pftrace(write({p1, p2}, {}, {}, processes));
  EXPECT_EQ(slice_named(two, "system#5").flow_ids, (std::vector<std::uint64_t>{(std::uint64_t{2} << 32) | 5}));
  EXPECT_EQ(slice_named(two, "system#6").flow_ids, (std::vector<std::uint64_t>{(std::uint64_t{3} << 32) | 5}));
}

TEST(PerfettoTrace, ADriverCallInsideARuntimeCallImpliesItsParentAndRule) {
  // Known answer on one thread: op 1 > runtime call 2 (parent 1 by containment) > driver calls. A driver call
  // directly inside a runtime call implies that call's parent and rule; with a parent written, a slice that is not
  // a device activity implies the rule "context".
  Span op = make_span(1, Level::kFramework, 0, 1000, 7);
  op.parent_rule = ParentRule::kNone;
  Span runtime = make_span(2, Level::kSystem, 10, 500, 7, 1);
  runtime.tags = {{"domain", "runtime"}};
  runtime.parent_rule = ParentRule::kContainment;  // the enclosing slice, but not "context": written
  Span d1 = make_span(3, Level::kSystem, 20, 30, 7, 1);
  d1.tags = {{"domain", "driver"}};
  d1.parent_rule = ParentRule::kContainment;  // the runtime call's parent and rule: both left out
  Span d2 = make_span(4, Level::kSystem, 40, 50, 7, 1);
  d2.tags = {{"domain", "driver"}};
  d2.parent_rule = ParentRule::kContext;  // the runtime call's parent, another rule: the rule written
  Span d3 = make_span(5, Level::kSystem, 60, 70, 7, 2);
  d3.tags = {{"domain", "driver"}};
  d3.parent_rule = ParentRule::kContext;  // the runtime call itself: its parent written, "context" implied
  Span replayed = make_span(6, Level::kFramework, 100, 200, 0, 1);  // a graph replay under the host's op
  replayed.track = Track::stream(0, 7);
  replayed.parent_rule = ParentRule::kContext;
  const Decoded d = read_pftrace(write({op, runtime, d1, d2, d3, replayed}));
  const auto& r = slice_named(d, "system#2").args;
  EXPECT_FALSE(r.contains("xsp.parent_id"));
  EXPECT_EQ(std::get<std::string>(r.at("xsp.parent_rule")), "containment");
  const auto& a = slice_named(d, "system#3");
  EXPECT_EQ(a.category, "cuda_driver");
  EXPECT_FALSE(a.args.contains("xsp.parent_id"));
  EXPECT_FALSE(a.args.contains("xsp.parent_rule"));
  const auto& b = slice_named(d, "system#4").args;
  EXPECT_FALSE(b.contains("xsp.parent_id"));
  EXPECT_EQ(std::get<std::string>(b.at("xsp.parent_rule")), "context");
  const auto& c = slice_named(d, "system#5").args;
  EXPECT_EQ(std::get<std::int64_t>(c.at("xsp.parent_id")), 2);
  EXPECT_FALSE(c.contains("xsp.parent_rule"));
  const Slice& g = slice_named(d, "framework#6");
  EXPECT_EQ(g.category, "gpu_user_annotation");
  EXPECT_EQ(std::get<std::int64_t>(g.args.at("xsp.parent_id")), 1);
  EXPECT_FALSE(g.args.contains("xsp.parent_rule"));
}

TEST(PerfettoTrace, AnEmptyTraceIsAValidFile) {
  const Decoded d = read_pftrace(write({}));
  EXPECT_EQ(span_slices(d), 0u);
  EXPECT_EQ(d.primary_clock, 3u);
}

}  // namespace
}  // namespace xsp
