// GET /api/v1/models: the zoo listing of the service (service::list_models), as JSON.
#include "api.h"
#include "xsp/service/service.h"

namespace xsp::detail {

using json = nlohmann::json;

void routes::list_models(Api& api, const httplib::Request& req, httplib::Response& res, const std::smatch&) {
  check_params(req, {});
  const service::ModelListing listing = service::list_models(api.options.zoo);
  json models = json::array();
  for (const service::ModelEntry& m : listing.models) {
    json frameworks = json::array();
    for (const service::ModelFramework& f : m.frameworks)
      frameworks.push_back({{"name", f.name},
                            {"constraint", f.constraint},
                            {"graph", f.graph},
                            {"exported", f.exported},
                            {"in_this_build", f.in_this_build}});
    json inputs = json::array();
    for (const auto& dimensions : m.input_dimensions) inputs.push_back({{"dimensions", dimensions}});
    models.push_back({{"name", m.name},
                      {"version", m.version},
                      {"description", m.description},
                      {"frameworks", frameworks},
                      {"inputs", inputs},
                      {"attributes", m.attributes}});
  }
  json problems = json::array();
  for (const service::ModelProblem& p : listing.problems)
    problems.push_back({{"file", p.file.string()}, {"message", p.message}});
  send_json(
      res, 200,
      {{"models", models}, {"problems", problems}, {"predictors_in_this_build", listing.predictors_in_this_build}});
}

}  // namespace xsp::detail
