#include "cli/command_line.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"

namespace hb::cli {
namespace {

// "--llm_model=x" -> "--llm-model=x", "-dataset" -> "--dataset" (names only, never values;
// nothing after "--"). CLI11 knows one spelling; the binaries have always taken all of these.
// "--name=" (an empty value) becomes "--name" "": CLI11 would take the next argument instead.
std::vector<std::string> NormalizeFlagNames(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  out.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg == "--") {
      out.insert(out.end(), args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
      break;
    }
    const bool numeric = arg.size() >= 2 && ((arg[1] >= '0' && arg[1] <= '9') || arg[1] == '.');
    if (arg.size() < 2 || arg[0] != '-' || numeric) {  // a value, or a negative one such as -5
      out.push_back(std::move(arg));
      continue;
    }
    if (arg[1] != '-' && arg.size() > 2) arg.insert(0, "-");
    const size_t end = std::min(arg.find('='), arg.size());
    std::replace(arg.begin() + 2, arg.begin() + static_cast<std::ptrdiff_t>(end), '_', '-');
    if (end + 1 == arg.size()) {
      arg.pop_back();
      out.push_back(std::move(arg));
      out.emplace_back();
      continue;
    }
    out.push_back(std::move(arg));
  }
  return out;
}

std::string FlagName(const std::string& arg) { return arg.substr(0, arg.find('=')); }

// Wraps `text` at `width` columns (CLI11 indents the continuation lines).
std::string Wrap(const std::string& text, size_t width) {
  std::string out;
  size_t line = 0;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (line > 0 && line + 1 + word.size() > width) {
      out += '\n';
      line = 0;
    } else if (line > 0) {
      out += ' ';
      ++line;
    }
    absl::StrAppend(&out, word);
    line += word.size();
  }
  return out;
}

// The first sentence of a subcommand's description (up to a full stop before a space or a line
// end, within its first paragraph), its lines joined: never cut mid-sentence.
std::string FirstSentence(const std::string& description) {
  std::string paragraph = description.substr(0, description.find("\n\n"));
  for (size_t i = 0; i < paragraph.size(); ++i) {
    if (paragraph[i] == '.' &&
        (i + 1 == paragraph.size() || paragraph[i + 1] == ' ' || paragraph[i + 1] == '\n')) {
      paragraph.resize(i + 1);
      break;
    }
  }
  return absl::StrReplaceAll(paragraph, {{"\n", " "}});
}

// Help 100 columns wide; each subcommand listed with the first sentence of its description
// (its own help has the rest).
class Formatter : public CLI::Formatter {
 public:
  std::string make_option_desc(const CLI::Option* option) const override {
    return Wrap(option->get_description(), 100 - get_column_width());
  }

  std::string make_subcommand(const CLI::App* sub) const override {
    std::string out = "  " + sub->get_display_name();
    out.resize(std::max<size_t>(out.size() + 1, get_column_width()), ' ');
    const std::string indent(get_column_width(), ' ');
    return out +
           absl::StrReplaceAll(
               Wrap(FirstSentence(sub->get_description()), 100 - get_column_width()),
               {{"\n", "\n" + indent}}) +
           "\n";
  }
};

}  // namespace

struct Command::Binding {
  CLI::Option* option = nullptr;
  CLI::Option* negation = nullptr;  // --no<name> of a boolean
  std::string name;
  bool repeatable = false;
  std::function<bool(const std::string&, std::string*)> set;
};

Command::Command(CLI::App* app, std::string display_name)
    : app_(app), display_name_(std::move(display_name)) {
  app_->allow_extras();
}

Command::~Command() = default;

CLI::Option* Command::AddOption(const std::string& name, const std::string& value_name,
                                const std::string& help, std::string default_text,
                                std::function<bool(const std::string&, std::string*)> set) {
  CLI::Option* option = app_->add_option("--" + name, help)
                            ->expected(1)
                            ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
                            ->type_name(value_name)
                            ->group(group_);
  if (!default_text.empty()) option->default_str(std::move(default_text));
  auto binding = std::make_unique<Binding>();
  binding->option = option;
  binding->name = "--" + name;
  binding->set = std::move(set);
  bindings_.push_back(std::move(binding));
  return option;
}

void Command::Bool(const std::string& name, bool* target, const std::string& help) {
  auto binding = std::make_unique<Binding>();
  binding->option =
      app_->add_flag("--" + name,
                     *target ? absl::StrCat(help, " (--no", name, " turns it off)") : help)
          ->group(group_);
  binding->option->default_str(*target ? "true" : "false");
  binding->negation = app_->add_flag("--no" + name, "")->group("");
  binding->name = "--" + name;
  binding->set = [target](const std::string& text, std::string* error) {
    return absl::ParseFlag(text, target, error);
  };
  bindings_.push_back(std::move(binding));
}

void Command::Repeated(const std::string& name, std::vector<std::string>* target,
                       const std::string& value_name, const std::string& help) {
  AddOption(name, value_name, help, "", [target](const std::string& text, std::string*) {
    target->push_back(text);
    return true;
  });
  bindings_.back()->repeatable = true;
}

void Command::Positionals(const std::string& value_name, std::vector<std::string>* target,
                          const std::string& help) {
  app_->add_option(value_name, *target, help)->expected(0, -1);
}

bool Command::Given(const std::string& name) const {
  for (const std::unique_ptr<Binding>& binding : bindings_) {
    if (binding->name != "--" + name) continue;
    return binding->option->count() > 0 ||
           (binding->negation != nullptr && binding->negation->count() > 0);
  }
  return false;
}

absl::Status Command::CheckExtras() const {
  const std::vector<std::string> extras = app_->remaining();
  if (extras.empty()) return absl::OkStatus();
  const std::string& first = extras.front();
  if (first.size() < 2 || first[0] != '-' || first == "--") {
    return absl::InvalidArgumentError(
        absl::StrCat("unexpected argument '", first, "'", positional_hint_));
  }
  const CLI::App* parent = app_->get_parent();
  if (parent != nullptr) {
    for (const CLI::App* sibling : parent->get_subcommands({})) {
      if (sibling->get_option_no_throw(FlagName(first)) != nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("flag ", FlagName(first), " does not apply to '", app_->get_name(), "'"));
      }
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown flag ", first));
}

absl::Status Command::Apply() const {
  if (absl::Status extras = CheckExtras(); !extras.ok()) return extras;
  for (const std::unique_ptr<Binding>& binding : bindings_) {
    std::vector<std::string> values = binding->option->results();
    if (binding->negation != nullptr) {
      values.insert(values.end(), binding->negation->count(), "false");
    }
    if (values.size() > 1 && !binding->repeatable) {
      if (!last_value_wins_) {
        return absl::InvalidArgumentError(absl::StrCat("flag ", binding->name, " given twice"));
      }
      values.erase(values.begin(), values.end() - 1);
    }
    for (const std::string& value : values) {
      std::string error;
      if (!binding->set(value, &error)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "invalid value '", value, "' for ", binding->name, error.empty() ? "" : ": ", error));
      }
    }
  }
  return absl::OkStatus();
}

Program::Program(std::string name, const std::string& description, const std::string& footer)
    : name_(std::move(name)), app_(std::make_unique<CLI::App>(description + "\n", name_)) {
  app_->set_help_flag("-h,--help,--helpfull", "print this help and exit");
  app_->set_version_flag("--version", std::string(HB_VERSION_STRING), "print the version");
  app_->footer(footer);
  app_->formatter(std::make_shared<Formatter>());
  app_->get_formatter()->column_width(34);
  app_->option_defaults()->always_capture_default(false);
  root_ = std::make_unique<Command>(app_.get(), name_);
}

Program::~Program() = default;

Command& Program::AddSubcommand(const std::string& name, const std::string& description,
                                const std::string& footer) {
  CLI::App* sub = app_->add_subcommand(name, description + "\n");
  sub->footer(footer);
  subcommands_.push_back(std::make_unique<Command>(sub, absl::StrCat(name_, " ", name)));
  return *subcommands_.back();
}

Command* Program::Find(const std::string& subcommand) const {
  for (const std::unique_ptr<Command>& command : subcommands_) {
    if (command->app()->get_name() == subcommand) return command.get();
  }
  return nullptr;
}

std::string Program::Help(const std::string& subcommand) const {
  const Command* command = Find(subcommand);
  if (command == nullptr) return app_->help();
  return const_cast<Command*>(command)->app()->help(name_);
}

absl::StatusOr<Parsed> Program::Parse(std::vector<std::string> args) {
  Parsed parsed;
  if (!subcommands_.empty() && !args.empty() && args.front() == "help") {
    // `help` or `help COMMAND` (as `COMMAND --help`).
    if (args.size() >= 2 && Find(args[1]) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown command '", args[1], "'"));
    }
    parsed.help = Help(args.size() >= 2 ? args[1] : "");
    return parsed;
  }
  args = NormalizeFlagNames(args);
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last first
  app_->clear();
  auto given = [&]() -> Command* {
    for (const std::unique_ptr<Command>& command : subcommands_) {
      if (command->app()->parsed()) return command.get();
    }
    return nullptr;
  };
  try {
    app_->parse(args);
  } catch (const CLI::CallForHelp&) {
    parsed.help = given() != nullptr ? Help(given()->app()->get_name()) : Help();
    return parsed;
  } catch (const CLI::CallForAllHelp&) {
    parsed.help = Help();
    return parsed;
  } catch (const CLI::CallForVersion& e) {
    parsed.help = absl::StrCat(e.what(), "\n");
    return parsed;
  } catch (const CLI::ArgumentMismatch& e) {
    const std::string message = e.what();
    if (absl::StrContains(message, " required ") && absl::EndsWith(message, " missing")) {
      return absl::InvalidArgumentError(
          absl::StrCat("flag ", message.substr(0, message.find(':')), " needs a value"));
    }
    return absl::InvalidArgumentError(message);
  } catch (const CLI::ParseError& e) {
    return absl::InvalidArgumentError(e.what());
  }
  Command* command = given();
  if (!subcommands_.empty() && command == nullptr) {
    const std::vector<std::string> extras = app_->remaining();
    if (!extras.empty() && extras.front()[0] != '-') {
      return absl::InvalidArgumentError(absl::StrCat("unknown command '", extras.front(), "'"));
    }
    if (extras.empty()) return absl::InvalidArgumentError("missing command");
  }
  if (absl::Status applied = root_->Apply(); !applied.ok()) return applied;
  if (command != nullptr) {
    parsed.subcommand = command->app()->get_name();
    if (absl::Status applied = command->Apply(); !applied.ok()) return applied;
  }
  return parsed;
}

std::optional<int> Program::ParseOrExit(int argc, char** argv, std::string* subcommand) {
  absl::StatusOr<Parsed> parsed = Parse(std::vector<std::string>(argv + 1, argv + argc));
  if (!parsed.ok()) {
    std::string given;
    for (const std::unique_ptr<Command>& command : subcommands_) {
      if (command->app()->parsed()) given = command->app()->get_name();
    }
    return UsageError(given, parsed.status());
  }
  if (parsed->help.has_value()) {
    std::fputs(parsed->help->c_str(), stdout);
    return 0;
  }
  if (subcommand != nullptr) *subcommand = parsed->subcommand;
  return std::nullopt;
}

int Program::UsageError(const std::string& subcommand, const absl::Status& status) const {
  const std::string command = subcommand.empty() ? name_ : absl::StrCat(name_, " ", subcommand);
  std::fprintf(stderr, "%s: %s (see %s --help)\n", command.c_str(), OneLine(status).c_str(),
               command.c_str());
  return kExitUsage;
}

std::string OneLine(const absl::Status& status) {
  return absl::StrReplaceAll(status.message(), {{"\n", " "}});
}

}  // namespace hb::cli
