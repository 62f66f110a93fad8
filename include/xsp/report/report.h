// The self-contained HTML report (`xsp report ID [ID ...] -o report.html`): one file that opens offline in a browser,
// with every analysis of SPEC §4 as a Vega-Lite chart and a table, scenario latency distributions, accuracy, a
// zoomable trace timeline of one batch, and, for several evaluations, the `xsp compare` tables with a chart.
//
// Vega, Vega-Lite and vega-embed (npm, pinned in tools/vega/package.json; BSD-3-Clause) are inlined at build time
// with their licences, so the file makes no network request. Charts render with Vega's SVG renderer.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "xsp/analysis/analyses.h"
#include "xsp/analysis/compare.h"
#include "xsp/record/record.h"

namespace xsp {

/// One evaluation of the report, with the options its analyses run with (ceilings for the rooflines: the caller
/// reads them from the store, see select_ceilings()).
struct ReportEvaluation {
  EvaluationRecord record;
  AnalysisOptions options;
};

/// What the report holds beyond the evaluations.
struct ReportOptions {
  std::string title;                         ///< "" = "XSP report: " and the evaluations' ids
  CompareOptions compare;                    ///< the comparison section's options (two or more evaluations)
  std::size_t max_timeline_spans = 20000;    ///< spans drawn in one batch's timeline at most (the longest kept)
  std::size_t max_histogram_values = 20000;  ///< latencies drawn per scenario run at most (evenly sampled)
  /// Links drawn first in the page's navigation bar, as (text, href) pairs, e.g. {"all evaluations", "/"} when
  /// the web UI serves the report; the hrefs are written as given (escaped), the texts escaped.
  std::vector<std::pair<std::string, std::string>> links;
};

/// One chart of the report: where it goes, its Vega-Lite spec (data inlined) and how many marks its main mark
/// (the unit named "main") must draw once rendered: one per data row with the values it encodes, or -1 when that
/// is not known in advance (aggregated histograms).
struct ReportChart {
  std::string element_id;
  std::string title;
  nlohmann::json spec;
  long expected_marks = -1;
  /// A span timeline (span_timeline_chart()): the page offers its spans as a Chrome trace JSON file for Perfetto.
  bool timeline = false;
};

/// Whether this build inlined Vega, Vega-Lite and vega-embed (tools/vega/node_modules existed at configure time).
bool report_assets_available();

/// The charts render_report() draws for `evaluations`, in page order (exposed for tests and the web UI).
std::vector<ReportChart> report_charts(const std::vector<ReportEvaluation>& evaluations, const ReportOptions& options);

/// A timeline of every span under `root` in `trace` (root included), as a Vega-Lite spec: one lane per track
/// (host thread, then GPU stream) and nesting depth on that track (spans inside another on the same track, by
/// their intervals, are drawn one lane lower; depth capped at 16), one rect per span coloured by level with its name
/// inside when the box is at least 24 px wide (cut to the box, following zoom), a rule from each CUDA launch to the
/// kernel it launched (same correlation id, at most 2,000), x in ms from the root's start, zoom and pan on x, and a
/// search box that fades the spans whose names do not contain the text. `max_spans` keeps the longest spans when
/// there are more. The main unit (named "main") draws one rect per kept span. std::nullopt when `root` has no span
/// under it (a MODEL-level run: one bar says nothing a latency does not).
std::optional<ReportChart> span_timeline_chart(const Trace& trace, const Span& root, const std::string& title,
                                               const std::string& element_id, std::size_t max_spans);

/// The same timeline of every span of `trace` that overlaps [start_ns, end_ns) (host clock ns), x in ms from
/// start_ns ("time from the start of `window_name`"), each box clipped to the window (its tooltip keeps the span's own
/// duration): what a server did during a client's slow interval (the serving-tail join). std::nullopt when no span
/// overlaps it or end_ns <= start_ns.
std::optional<ReportChart> window_timeline_chart(const Trace& trace, std::int64_t start_ns, std::int64_t end_ns,
                                                 const std::string& window_name, const std::string& title,
                                                 const std::string& element_id, std::size_t max_spans);

/// span_timeline_chart() of the last measured MODEL "predict" span of `run` (model → layer → kernel); std::nullopt
/// when the run has no predict span.
std::optional<ReportChart> timeline_chart(const RunRecord& run, const std::string& element_id, std::size_t max_spans);

/// The whole HTML page; `chart_count`, when given, receives the number of charts in it. Throws std::runtime_error
/// when report_assets_available() is false (naming how to install them) and std::invalid_argument when
/// `evaluations` is empty.
std::string render_report(const std::vector<ReportEvaluation>& evaluations, const ReportOptions& options = {},
                          std::size_t* chart_count = nullptr);

}  // namespace xsp
