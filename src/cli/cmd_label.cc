// xsp label ID [--name N] [--tag T ...] [--untag T ...] [--note TEXT]: what a person writes on an evaluation to find it
// again (EvaluationLabels), through service::label_evaluation(), the call PATCH /api/v1/evaluations/{id} makes too.
#include <iostream>

#include "common.h"
#include "xsp/service/service.h"

namespace xsp::cli {
namespace {

// The service names its fields as the API does ("name", "tags", "note"); the command line says which flag.
CLI::ValidationError as_usage_error(const service::InvalidArgument& e) {
  const std::string field = e.field();
  std::string message = e.what();
  if (message.rfind(field + ": ", 0) == 0) message.erase(0, field.size() + 2);
  if (field == "labels")
    return CLI::ValidationError("xsp label: nothing to change: give --name, --tag, --untag or --note");
  return CLI::ValidationError("--" + std::string(field == "tags" ? "tag" : field) + ": " + message);
}

void print_labels(std::int64_t id, const EvaluationLabels& l) {
  std::cout << "evaluation " << id << "\n  name: " << (l.name.empty() ? "(none)" : l.name) << "\n  tags: ";
  if (l.tags.empty()) std::cout << "(none)";
  for (std::size_t i = 0; i < l.tags.size(); ++i) std::cout << (i == 0 ? "" : ", ") << l.tags[i];
  std::cout << "\n  note: " << (l.note.empty() ? "(none)" : l.note) << "\n";
}

}  // namespace

void add_label_command(CLI::App& app, Globals& g, Commands& out) {
  auto* sub = app.add_subcommand("label",
                                 "name, tag or annotate a stored evaluation (shown by `xsp serve`'s list and the API; "
                                 "the web UI filters on tags)");
  struct Args {
    std::int64_t id = 0;
    std::optional<std::string> name, note;
    std::vector<std::string> tags, untags;
    bool clear_tags = false;
  };
  auto a = std::make_shared<Args>();
  sub->add_option("id", a->id, "evaluation id")->required()->check(CLI::PositiveNumber);
  sub->add_option("--name", a->name, "a short name (at most 120 characters, one line); \"\" removes it");
  sub->add_option("--tag", a->tags, "add a tag (1-40 of letters, digits and . _ : / + = @ -); repeatable")
      ->allow_extra_args(false);
  sub->add_option("--untag", a->untags, "remove a tag; repeatable")->allow_extra_args(false);
  sub->add_flag("--clear-tags", a->clear_tags, "remove every tag first (then --tag adds)");
  sub->add_option("--note", a->note, "a note (at most 4000 characters); \"\" removes it");
  out.push_back({sub, [&g, a] {
                   service::LabelChange change;
                   change.name = a->name;
                   change.note = a->note;
                   if (a->clear_tags) change.tags = std::vector<std::string>{};
                   change.add_tags = a->tags;
                   change.remove_tags = a->untags;
                   try {
                     service::validate_label_change(change);  // before the store is opened: a usage error
                   } catch (const service::InvalidArgument& e) {
                     throw as_usage_error(e);
                   }
                   auto store = open_store(g, StoreAccess::kReadWrite, 5);
                   EvaluationLabels labels;
                   try {
                     labels = service::label_evaluation(*store, a->id, change);
                   } catch (const service::InvalidArgument& e) {  // too many tags once merged
                     throw as_usage_error(e);
                   }
                   print_labels(a->id, labels);
                   return 0;
                 }});
}

}  // namespace xsp::cli
