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
};

/// One chart of the report: where it goes, its Vega-Lite spec (data inlined) and how many marks its main mark
/// (the unit named "main") must draw once rendered: one per data row with the values it encodes, or -1 when that
/// is not known in advance (aggregated histograms).
struct ReportChart {
  std::string element_id;
  std::string title;
  nlohmann::json spec;
  long expected_marks = -1;
};

/// Whether this build inlined Vega, Vega-Lite and vega-embed (tools/vega/node_modules existed at configure time).
bool report_assets_available();

/// The charts render_report() draws for `evaluations`, in page order (exposed for tests and the web UI).
std::vector<ReportChart> report_charts(const std::vector<ReportEvaluation>& evaluations, const ReportOptions& options);

/// The timeline of one measured batch as a Vega-Lite spec: every span under the last measured MODEL "predict" span
/// of `run` (model → layer → kernel), one rect per span on a row per level and track, x in ms from the batch's
/// start, zoom and pan on x (interval selection bound to the scales), tooltips with name, level and duration.
/// std::nullopt when the run has no predict span. `max_spans` keeps the longest spans when there are more.
std::optional<ReportChart> timeline_chart(const RunRecord& run, const std::string& element_id, std::size_t max_spans);

/// The whole HTML page; `chart_count`, when given, receives the number of charts in it. Throws std::runtime_error
/// when report_assets_available() is false (naming how to install them) and std::invalid_argument when
/// `evaluations` is empty.
std::string render_report(const std::vector<ReportEvaluation>& evaluations, const ReportOptions& options = {},
                          std::size_t* chart_count = nullptr);

}  // namespace xsp
