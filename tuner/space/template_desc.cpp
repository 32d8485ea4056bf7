#include <array>
#include "space/template_desc.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <toml++/toml.h>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "space/toml_reader.hpp"

namespace fs = std::filesystem;

namespace cmt {

namespace {

using detail::in_file_order;
using detail::join_keys;
using detail::line_of;

constexpr std::string_view k_descriptor_keys[] = {"name",     "kernel",     "summary", "param",   "derived", "include", "launch",
                                           "requires", "constraint", "applies", "layouts", "batched",
                                           "dtypes",   "generic_default", "arch_specific"};
/// The problem's names, which only `applies` may use.
constexpr std::string_view k_problem_names[] = {"M", "N", "K", "BATCH"};
constexpr std::string_view k_fragment_keys[] = {"constraint"};
constexpr std::string_view k_param_keys[] = {"name", "values", "help"};
constexpr std::string_view k_launch_keys[] = {"threads", "tile_m", "tile_n", "dynamic_smem", "grid_z",
                                              "problems_per_block", "tensor_maps"};
constexpr std::string_view k_requires_keys[] = {"align_bytes", "ld_multiple"};
constexpr std::string_view k_constraint_keys[] = {"check", "reason"};
/// The longest chain of derived values naming each other (read_derived says why there is one).
constexpr size_t k_max_derived_chain = 64;

bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

/// Whether `file` is a regular file; `error` gets the system's reason when it cannot tell (a name
/// too long, a loop of links, no permission). The throwing std::filesystem calls let a
/// filesystem_error out of the loader there instead of a UsageError naming the file.
bool is_regular(const fs::path& file, std::string& error) {
  std::error_code ec;
  const fs::file_status status = fs::status(file, ec);
  if (status.type() == fs::file_type::none) error = ec.message();
  return fs::is_regular_file(status);
}

std::string path_of(std::string_view table_key, std::string_view key) {
  return table_key.empty() ? std::string(key) : fmt::format("{}.{}", table_key, key);
}

/// Reads one TOML file of a descriptor (the descriptor itself or a fragment it includes) into the
/// descriptor being built; every error is "FILE:LINE: KEY: message" for this file.
class DescriptorFileReader : public detail::TomlFileReader {
 public:
  DescriptorFileReader(const fs::path& file, TemplateDesc& desc) : TomlFileReader(file.string()), m_file(file), m_desc(desc) {}

  /// The descriptor proper: everything but the fragments' constraints, which read_includes adds.
  void read_descriptor() {
    const toml::table root = parse(read_text_file(m_file, "template descriptor"));
    check_keys(root, "", k_descriptor_keys);
    m_desc.descriptor_path = m_file;
    m_desc.name = required_string(root, "name", "");
    m_desc.kernel = required_string(root, "kernel", "");
    m_desc.summary = required_string(root, "summary", "");
    const std::string stem = m_file.stem().string();
    if (m_desc.name != stem)
      fail(line_of(*root.get("name")), "name", fmt::format("'{}' must equal the file's stem '{}'", m_desc.name, stem));
    if (!is_identifier(m_desc.kernel))
      fail(line_of(*root.get("kernel")), "kernel", fmt::format("'{}' is not a C++ identifier", m_desc.kernel));

    read_params(root);
    read_operand_support(root);
    read_generic_default(root);
    read_derived(root);
    read_includes(root);
    read_constraints(root);
    if (const toml::node* node = root.get("applies")) {
      m_problem_names_allowed = true;
      m_desc.applies = parse_expression(*node, "applies");
      m_problem_names_allowed = false;
    }

    const toml::table* launch = required_table(root, "launch");
    check_keys(*launch, "launch", k_launch_keys);
    m_desc.threads = expression(*launch, "launch", "threads", std::nullopt);
    m_desc.tile_m = expression(*launch, "launch", "tile_m", std::nullopt);
    m_desc.tile_n = expression(*launch, "launch", "tile_n", std::nullopt);
    m_desc.dynamic_smem = expression(*launch, "launch", "dynamic_smem", "0");
    m_desc.grid_z = expression(*launch, "launch", "grid_z", "1");
    if (const toml::node* node = launch->get("problems_per_block")) {
      // The kernel's signature changes with it (it takes the batch's problem count), and only a
      // batched kernel has problems to put together.
      if (!m_desc.batched)
        fail(line_of(*node), "launch.problems_per_block",
             "only a batched family (batched = true) computes several problems per block");
      m_desc.problems_per_block = parse_expression(*node, "launch.problems_per_block");
    }

    if (const toml::node* node = launch->get("tensor_maps")) {
      const toml::value<bool>* value = node->as_boolean();
      if (!value) fail(line_of(*node), "launch.tensor_maps", "must be true or false");
      m_desc.tensor_maps = value->get();
    }
    if (const toml::node* node = root.get("arch_specific")) {
      const toml::value<bool>* value = node->as_boolean();
      if (!value) fail(line_of(*node), "arch_specific", "must be true or false");
      m_desc.arch_specific = value->get();
    }

    // [requires] is optional: its absence means plain 4-byte alignment and any leading dimension.
    static const toml::table k_empty;
    const toml::table* req = &k_empty;
    if (const toml::node* node = root.get("requires")) {
      req = node->as_table();
      if (!req) fail(line_of(*node), "requires", "must be a table");
      check_keys(*req, "requires", k_requires_keys);
    }
    m_desc.align_bytes = expression(*req, "requires", "align_bytes", "4");
    m_desc.ld_multiple = expression(*req, "requires", "ld_multiple", "1");

    m_desc.source_path = m_file.parent_path() / (stem + ".cuh");
    std::string error;
    if (!is_regular(m_desc.source_path, error))
      throw UsageError(error.empty() ? fmt::format("{}: the kernel source '{}' is missing (it must sit beside the descriptor)",
                                                   m_display, m_desc.source_path.string())
                                     : fmt::format("{}: cannot read the kernel source '{}': {}", m_display,
                                                   m_desc.source_path.string(), error));
  }

  /// A fragment: [[constraint]] tables only, over the names of the including descriptor.
  void read_fragment() {
    const toml::table root = parse(read_text_file(m_file, "constraint fragment"));
    check_keys(root, "", k_fragment_keys);
    read_constraints(root);
  }

 private:
  template <size_t N>
  void check_keys(const toml::table& table, std::string_view table_key, const std::string_view (&known)[N]) const {
    for (auto&& [key, node] : table) {
      if (std::find(std::begin(known), std::end(known), key.str()) == std::end(known))
        fail(static_cast<int>(key.source().begin.line), path_of(table_key, key.str()),
             fmt::format("unknown key (known: {})", join_keys(known)));
    }
  }

  std::string required_string(const toml::table& table, std::string_view key, std::string_view table_key) const {
    const toml::node* node = table.get(key);
    if (!node) fail(line_of(table), path_of(table_key, key), "required key is missing");
    if (!node->is_string()) fail(line_of(*node), path_of(table_key, key), "must be a string");
    return node->as_string()->get();
  }

  const toml::table* required_table(const toml::table& root, std::string_view key) const {
    const toml::node* node = root.get(key);
    if (!node) fail(1, key, fmt::format("required table [{}] is missing", key));
    if (!node->is_table()) fail(line_of(*node), key, "must be a table");
    return node->as_table();
  }

  /// Whether an expression may use a name: a parameter, a derived value declared so far, or a
  /// DEVICE_* name of the target.
  bool known_name(const std::string& name) const {
    const auto is = [&](const auto& item) { return item.name == name; };
    if (m_problem_names_allowed &&
        std::find(std::begin(k_problem_names), std::end(k_problem_names), name) != std::end(k_problem_names))
      return true;
    return std::any_of(m_desc.params.begin(), m_desc.params.end(), is) ||
           std::any_of(m_desc.derived.begin(), m_desc.derived.end(), is) ||
           std::any_of(target_names().begin(), target_names().end(), [&](const auto& t) { return t.first == name; });
  }

  /// What an expression may name, for the message about a name it may not.
  std::string names_in_scope() const {
    std::vector<std::string> params, derived, device;
    for (const auto& p : m_desc.params) params.push_back(p.name);
    for (const auto& d : m_desc.derived) derived.push_back(d.name);
    for (const auto& t : target_names()) device.push_back(t.first);
    std::string out = fmt::format("parameters: {}", join(params));
    if (!derived.empty()) out += fmt::format("; derived: {}", join(derived));
    if (m_problem_names_allowed) out += "; problem: M, N, K, BATCH";
    return out + fmt::format("; device: {}", join(device));
  }

  /// Parses an expression from a node (a string, or a bare integer) and checks every name in it.
  Expr parse_expression(const toml::node& node, const std::string& key_path) const {
    const int line = line_of(node);
    std::string text;
    if (node.is_string()) {
      text = node.as_string()->get();
    } else if (node.is_integer()) {
      // A bare integer is a constant expression; accepting it saves quoting "0".
      text = std::to_string(node.as_integer()->get());
    } else {
      fail(line, key_path, "must be a string holding an expression");
    }
    return checked(text, line, key_path);
  }

  Expr checked(const std::string& text, int line, const std::string& key_path) const {
    Expr expr;
    try {
      expr = Expr::parse(text);
    } catch (const UsageError& e) {
      fail(line, key_path, e.what());
    }
    for (const std::string& ident : expr.identifiers())
      if (!known_name(ident))
        fail(line, key_path, fmt::format("'{}' names unknown parameter '{}' ({})", text, ident, names_in_scope()));
    return expr;
  }

  /// An expression key of a table, or the fallback text when the key is absent and has one.
  Expr expression(const toml::table& table, std::string_view table_key, std::string_view key,
                  std::optional<std::string_view> fallback) const {
    const std::string key_path = path_of(table_key, key);
    if (const toml::node* node = table.get(key)) return parse_expression(*node, key_path);
    if (!fallback) fail(line_of(table), key_path, "required key is missing");
    return checked(std::string(*fallback), line_of(table), key_path);
  }

  /// Each element of an array of tables, with its index, as "KEY[i]".
  std::vector<std::pair<std::string, const toml::table*>> table_array(const toml::table& root, std::string_view key) const {
    std::vector<std::pair<std::string, const toml::table*>> out;
    const toml::node* node = root.get(key);
    if (!node) return out;
    const toml::array* array = node->as_array();
    if (!array) fail(line_of(*node), key, fmt::format("must be an array of tables ([[{}]])", key));
    for (size_t i = 0; i < array->size(); ++i) {
      const toml::node& item = *array->get(i);
      const std::string item_key = fmt::format("{}[{}]", key, i);
      if (!item.is_table()) fail(line_of(item), item_key, "must be a table");
      out.emplace_back(item_key, item.as_table());
    }
    return out;
  }

  void read_params(const toml::table& root) {
    const auto tables = table_array(root, "param");
    if (tables.empty()) fail(1, "param", "a template needs at least one [[param]]");
    for (const auto& [key, table] : tables) {
      check_keys(*table, key, k_param_keys);
      ParamDesc param;
      param.name = required_string(*table, "name", key);
      const int line = line_of(*table->get("name"));
      if (!is_identifier(param.name)) fail(line, key + ".name", fmt::format("'{}' is not a C++ identifier", param.name));
      if (is_target_name(param.name))
        fail(line, key + ".name", fmt::format("'{}': names starting with DEVICE_ are the target's", param.name));
      for (const auto& other : m_desc.params)
        if (other.name == param.name) fail(line, key + ".name", fmt::format("parameter '{}' is declared twice", param.name));
      const toml::node* values = table->get("values");
      if (!values) fail(line_of(*table), key + ".values", "required key is missing");
      param.values = value_list(*values, key + ".values");
      if (table->get("help")) param.help = required_string(*table, "help", key);
      m_desc.params.push_back(std::move(param));
    }
  }

  /// layouts = ["nn", "tn", ...] (default ["nn"]), batched = true|false (default false) and dtypes =
  /// ["f32", "f64", ...] (default ["f32"]). A family with a layout other than nn takes two more
  /// template arguments, TRANS_A and TRANS_B (0 or 1), after its own parameters, and one with a type
  /// other than f32 one more after those, DTYPE (its DType: 0 f32, 1 f64, 2 i32, 3 tf32x3); they are parameters like the
  /// others, so expressions may name them.
  void read_operand_support(const toml::table& root) {
    if (const toml::node* node = root.get("layouts")) {
      const toml::array* array = node->as_array();
      if (!array || array->empty()) fail(line_of(*node), "layouts", "must be a non-empty array of \"nn\", \"nt\", \"tn\", \"tt\"");
      m_desc.layouts.clear();
      for (size_t i = 0; i < array->size(); ++i) {
        const toml::node& item = *array->get(i);
        const auto ops = item.is_string() ? parse_layout(item.as_string()->get()) : std::nullopt;
        if (!ops) fail(line_of(item), fmt::format("layouts[{}]", i), "must be \"nn\", \"nt\", \"tn\" or \"tt\"");
        const std::string name(layout_name(ops->first, ops->second));
        if (std::find(m_desc.layouts.begin(), m_desc.layouts.end(), name) != m_desc.layouts.end())
          fail(line_of(item), fmt::format("layouts[{}]", i), fmt::format("'{}' is listed twice", name));
        m_desc.layouts.push_back(name);
      }
    }
    if (const toml::node* node = root.get("batched")) {
      if (!node->is_boolean()) fail(line_of(*node), "batched", "must be true or false");
      m_desc.batched = node->as_boolean()->get();
    }
    if (const toml::node* node = root.get("dtypes")) {
      const toml::array* array = node->as_array();
      if (!array || array->empty()) fail(line_of(*node), "dtypes", fmt::format("must be a non-empty array of type names ({})", type_names()));
      m_desc.dtypes.clear();
      for (size_t i = 0; i < array->size(); ++i) {
        const toml::node& item = *array->get(i);
        const auto d = item.is_string() ? parse_dtype(item.as_string()->get()) : std::nullopt;
        if (!d) fail(line_of(item), fmt::format("dtypes[{}]", i), fmt::format("must be one of {}", type_names()));
        if (std::find(m_desc.dtypes.begin(), m_desc.dtypes.end(), *d) != m_desc.dtypes.end())
          fail(line_of(item), fmt::format("dtypes[{}]", i), fmt::format("'{}' is listed twice", dtype_name(*d)));
        m_desc.dtypes.push_back(*d);
      }
    }
    if (m_desc.layouts != std::vector<std::string>{"nn"}) add_layout_params(root);
    if (m_desc.dtypes != std::vector<DType>{DType::f32}) {
      for (const auto& p : m_desc.params)
        if (p.name == "DTYPE") fail(line_of(root), "param", "'DTYPE' is implied by `dtypes`; it may not be declared");
      std::vector<std::string> codes;  // "0 f32", "1 f64", ...
      for (const TypeInfo& t : k_types) codes.push_back(fmt::format("{} {}", static_cast<int>(t.dtype), t.name));
      ParamDesc param{"DTYPE", {}, fmt::format("element type: {}", fmt::join(codes, ", "))};
      for (const DType d : m_desc.dtypes) param.values.push_back(static_cast<int64_t>(d));
      std::sort(param.values.begin(), param.values.end());
      param.implicit = true;
      m_desc.params.push_back(std::move(param));
    }
  }

  /// [generic_default]: PARAM = value for every declared parameter (not the implicit ones, which
  /// each build of the generic default takes from its layout and type).
  void read_generic_default(const toml::table& root) {
    const toml::node* node = root.get("generic_default");
    if (!node) return;
    const toml::table* table = node->as_table();
    if (!table) fail(line_of(*node), "generic_default", "must be a table of PARAM = value, one for each parameter");
    std::vector<std::string> declared;
    for (const auto& p : m_desc.params)
      if (!p.implicit) declared.push_back(p.name);
    for (const auto& [key, value] : in_file_order(*table)) {
      const std::string name(key->str());
      const std::string key_path = "generic_default." + name;
      const int line = static_cast<int>(key->source().begin.line);
      const auto param = std::find_if(m_desc.params.begin(), m_desc.params.end(),
                                      [&](const ParamDesc& p) { return p.name == name; });
      if (param == m_desc.params.end())
        fail(line, key_path, fmt::format("'{}' is not a parameter of the template (parameters: {})", name, join(declared)));
      if (param->implicit)
        fail(line, key_path,
             fmt::format("'{}' follows from the layout and element type of each build; it may not be given", name));
      if (!value->is_integer() || value->as_integer()->get() < 0 ||
          value->as_integer()->get() > std::numeric_limits<int>::max())
        fail(line, key_path, "must be a non-negative integer (a template argument)");
    }
    ParamValues values;
    for (const std::string& name : declared) {
      const toml::node* value = table->get(name);
      if (!value)
        fail(line_of(*node), "generic_default",
             fmt::format("parameter '{}' is missing: the generic default gives every parameter a value", name));
      values.emplace_back(name, value->as_integer()->get());
    }
    m_desc.generic_default = std::move(values);
  }

  /// TRANS_A and TRANS_B, the implicit parameters of `layouts`.
  void add_layout_params(const toml::table& root) {
    for (const std::string_view name : {"TRANS_A", "TRANS_B"}) {
      for (const auto& p : m_desc.params)
        if (p.name == name)
          fail(line_of(root), "param", fmt::format("'{}' is implied by `layouts`; it may not be declared", name));
      ParamDesc param{std::string(name), {}, fmt::format("op({}) transposed: 1 in layouts {}", name.back(),
                                                        name == "TRANS_A" ? "tn and tt" : "nt and tt")};
      for (const std::string& l : m_desc.layouts) {
        const int64_t v = (name == "TRANS_A" ? l[0] : l[1]) == 't' ? 1 : 0;
        if (std::find(param.values.begin(), param.values.end(), v) == param.values.end()) param.values.push_back(v);
      }
      std::sort(param.values.begin(), param.values.end());
      param.implicit = true;
      m_desc.params.push_back(std::move(param));
    }
  }

  /// [derived]: NAME = "expression", in file order; each may use the parameters and those above it.
  void read_derived(const toml::table& root) {
    const toml::node* node = root.get("derived");
    if (!node) return;
    std::map<std::string, size_t> chains;   // each derived value: the longest chain of them it ends
    const toml::table* table = node->as_table();
    if (!table) fail(line_of(*node), "derived", "must be a table of NAME = \"expression\"");
    for (const auto& [key, value] : in_file_order(*table)) {
      const std::string name(key->str());
      const std::string key_path = "derived." + name;
      const int line = static_cast<int>(key->source().begin.line);
      if (!is_identifier(name)) fail(line, key_path, fmt::format("'{}' is not an identifier", name));
      if (is_target_name(name)) fail(line, key_path, fmt::format("'{}': names starting with DEVICE_ are the target's", name));
      if (known_name(name)) fail(line, key_path, fmt::format("'{}' is already a parameter or derived value", name));
      Expr expr = parse_expression(*value, key_path);
      // A derived value is evaluated inside the evaluation of the one that names it, so a long chain
      // of them nests as deep as it is long: 20000 overflowed the stack. Descriptors chain two or three.
      size_t chain = 1;
      for (const std::string& ident : expr.identifiers())
        if (const auto it = chains.find(ident); it != chains.end()) chain = std::max(chain, it->second + 1);
      if (chain > k_max_derived_chain)
        fail(line, key_path,
             fmt::format("'{}' ends a chain of more than {} derived values, each naming the one before", name,
                         k_max_derived_chain));
      chains[name] = chain;
      m_desc.derived.push_back({name, std::move(expr)});
    }
  }

  /// include = ["common/x.toml", ...]: constraint fragments, relative to the descriptor's folder.
  void read_includes(const toml::table& root) {
    const toml::node* node = root.get("include");
    if (!node) return;
    const toml::array* array = node->as_array();
    if (!array) fail(line_of(*node), "include", "must be an array of file names");
    for (size_t i = 0; i < array->size(); ++i) {
      const toml::node& item = *array->get(i);
      const std::string key = fmt::format("include[{}]", i);
      if (!item.is_string()) fail(line_of(item), key, "must be a string");
      const fs::path relative(item.as_string()->get());
      if (relative.empty() || relative.is_absolute() ||
          std::any_of(relative.begin(), relative.end(), [](const fs::path& part) { return part == ".."; }))
        fail(line_of(item), key, fmt::format("'{}' must be a path inside the templates folder", relative.string()));
      const fs::path fragment = m_file.parent_path() / relative;
      std::string error;
      if (!is_regular(fragment, error))
        fail(line_of(item), key,
             error.empty() ? fmt::format("no such file '{}'", fragment.string())
                           : fmt::format("cannot read '{}': {}", fragment.string(), error));
      if (std::find(m_desc.includes.begin(), m_desc.includes.end(), fragment) != m_desc.includes.end())
        fail(line_of(item), key, fmt::format("'{}' is included twice", relative.string()));
      m_desc.includes.push_back(fragment);
      DescriptorFileReader(fragment, m_desc).read_fragment();
    }
  }

  void read_constraints(const toml::table& root) {
    for (const auto& [key, table] : table_array(root, "constraint")) {
      check_keys(*table, key, k_constraint_keys);
      Constraint constraint;
      constraint.check = expression(*table, key, "check", std::nullopt);
      constraint.reason = required_string(*table, "reason", key);
      constraint.file = m_file;
      m_desc.constraints.push_back(std::move(constraint));
    }
  }

  fs::path m_file;
  TemplateDesc& m_desc;
  bool m_problem_names_allowed = false;   // while reading `applies`
};

}  // namespace

int64_t TemplateDesc::eval(const Expr& expr, const ParamValues& values, const Target& target, std::string_view key) const {
  return eval_at(expr, values, target, nullptr, key);
}

std::string layout_of_params(const ParamValues& values) {
  const auto ta = find_param(values, "TRANS_A"), tb = find_param(values, "TRANS_B");
  return std::string(layout_name(ta.value_or(0) != 0, tb.value_or(0) != 0));
}

std::string TemplateDesc::layout_of(const ParamValues& values) const { return layout_of_params(values); }

DType dtype_of_params(const ParamValues& values) {
  const int64_t d = find_param(values, "DTYPE").value_or(0);
  for (const TypeInfo& t : k_types)
    if (static_cast<int64_t>(t.dtype) == d) return t.dtype;
  return DType::f32;
}

DType TemplateDesc::dtype_of(const ParamValues& values) const { return dtype_of_params(values); }

bool TemplateDesc::supports_dtype(DType dtype) const {
  return std::find(dtypes.begin(), dtypes.end(), dtype) != dtypes.end();
}

bool TemplateDesc::supports_layout(std::string_view layout) const {
  return std::find(layouts.begin(), layouts.end(), layout) != layouts.end();
}

bool TemplateDesc::serves(const ParamValues& values, const Problem& problem) const {
  return layout_of(values) == problem.layout() && dtype_of(values) == problem.dtype && (batched || problem.batch == 1);
}

bool TemplateDesc::applies_to(const ParamValues& values, const Target& target, const Problem& problem) const {
  return !applies || eval_at(*applies, values, target, &problem, "applies") != 0;
}

int64_t TemplateDesc::eval_at(const Expr& expr, const ParamValues& values, const Target& target, const Problem* problem,
                              std::string_view key) const {
  // Derived values are computed when first named, at most once per evaluation. Enumeration calls
  // this for every constraint of every grid point (millions in the full preset), so it allocates
  // nothing: the cache lives on the stack for up to k_inline derived values, and the lookup captures
  // one pointer, which std::function stores without allocating.
  constexpr size_t k_inline = 32;
  std::array<std::optional<int64_t>, k_inline> inline_values{};
  std::vector<std::optional<int64_t>> spilled_values(derived.size() > k_inline ? derived.size() : 0);
  struct State {
    const TemplateDesc* desc;
    const ParamValues* values;
    const Target* target;
    const Problem* problem;
    std::optional<int64_t>* derived_values;
    const ExprLookup* lookup;
  } state{this, &values, &target, problem,
          derived.size() > k_inline ? spilled_values.data() : inline_values.data(), nullptr};
  const ExprLookup lookup = [s = &state](std::string_view ident) -> std::optional<int64_t> {
    if (s->problem) {
      if (ident == "M") return s->problem->m;
      if (ident == "N") return s->problem->n;
      if (ident == "K") return s->problem->k;
      if (ident == "BATCH") return s->problem->batch;
    }
    if (auto v = find_param(*s->values, ident)) return v;
    const auto& derived = s->desc->derived;
    for (size_t i = 0; i < derived.size(); ++i) {
      if (derived[i].name != ident) continue;
      if (!s->derived_values[i]) s->derived_values[i] = derived[i].expr.eval(*s->lookup);
      return s->derived_values[i];
    }
    return s->target->lookup(ident);
  };
  state.lookup = &lookup;
  try {
    return expr.eval(lookup);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("template '{}' ({}): {} '{}' at {}: {}", name, descriptor_path.string(), key,
                                 expr.text(), params_to_string(values), e.what()));
  }
}

std::optional<size_t> TemplateDesc::failed_constraint(const ParamValues& values, const Target& target) const {
  for (size_t c = 0; c < constraints.size(); ++c)
    if (eval(constraints[c].check, values, target, "constraint") == 0) return c;
  return std::nullopt;
}

LaunchShape TemplateDesc::launch_shape(const ParamValues& values, const Target& target) const {
  LaunchShape shape;
  shape.threads = eval(threads, values, target, "launch.threads");
  shape.tile_m = eval(tile_m, values, target, "launch.tile_m");
  shape.tile_n = eval(tile_n, values, target, "launch.tile_n");
  shape.dynamic_smem = eval(dynamic_smem, values, target, "launch.dynamic_smem");
  shape.grid_z = eval(grid_z, values, target, "launch.grid_z");
  if (problems_per_block)
    shape.problems_per_block = eval(*problems_per_block, values, target, "launch.problems_per_block");
  shape.tensor_maps = tensor_maps ? 1 : 0;
  return shape;
}

Requirements TemplateDesc::requirements(const ParamValues& values, const Target& target) const {
  Requirements req;
  req.align_bytes = eval(align_bytes, values, target, "requires.align_bytes");
  req.ld_multiple = eval(ld_multiple, values, target, "requires.ld_multiple");
  return req;
}

std::string TemplateDesc::name_expression(const ParamValues& values) const {
  std::string args;
  for (const auto& [name, value] : values) args += fmt::format("{}{}", args.empty() ? "" : ", ", value);
  return fmt::format("{}<{}>", kernel, args);
}

SourceBundle TemplateDesc::load_source() const {
  return load_source_bundle(source_path, fmt::format("source of template '{}'", name));
}

TemplateDesc load_template(const fs::path& descriptor) {
  TemplateDesc desc;
  DescriptorFileReader(descriptor, desc).read_descriptor();
  return desc;
}

std::vector<TemplateDesc> load_templates(const std::vector<fs::path>& folders) {
  std::vector<TemplateDesc> out;
  for (const fs::path& folder : folders) {
    // The error_code overloads throughout: the throwing ones let a filesystem_error out for a name
    // too long or a folder that cannot be listed.
    std::error_code ec;
    if (!fs::is_directory(folder, ec)) throw UsageError(fmt::format("templates folder '{}' does not exist", folder.string()));
    std::vector<fs::path> files;
    fs::directory_iterator it(folder, ec);
    for (const fs::directory_iterator end; !ec && it != end; it.increment(ec)) {
      std::error_code file_ec;
      if (it->is_regular_file(file_ec) && it->path().extension() == ".toml") files.push_back(it->path());
    }
    if (ec) throw UsageError(fmt::format("templates folder '{}': cannot list it: {}", folder.string(), ec.message()));
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) out.push_back(load_template(file));
  }
  std::stable_sort(out.begin(), out.end(), [](const TemplateDesc& a, const TemplateDesc& b) { return a.name < b.name; });
  for (size_t i = 1; i < out.size(); ++i) {
    if (out[i].name == out[i - 1].name)
      throw UsageError(fmt::format("template '{}' is defined twice: {} and {}", out[i].name,
                                   out[i - 1].descriptor_path.string(), out[i].descriptor_path.string()));
  }
  return out;
}

const TemplateDesc* find_generic_default(const std::vector<TemplateDesc>& templates) {
  const TemplateDesc* found = nullptr;
  for (const TemplateDesc& t : templates) {
    if (!t.generic_default) continue;
    if (found)
      throw UsageError(fmt::format("templates '{}' ({}) and '{}' ({}) both declare [generic_default]; the exported "
                                   "header has one generic default kernel",
                                   found->name, found->descriptor_path.string(), t.name, t.descriptor_path.string()));
    found = &t;
  }
  return found;
}

fs::path default_templates_dir() {
  if (const char* env = std::getenv("CMTUNE_TEMPLATES"); env && *env) return fs::path(env);
  return fs::path(CMTUNE_SOURCE_DIR "/templates");
}

}  // namespace cmt
