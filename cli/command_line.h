// The command-line layer every binary shares (hb-grader, hb-llm-sim, hb-orchestrator, hb-env),
// on CLI11. Link hb::cli only from binaries (and their tests): libraries take Options structs.
//
// A Program is the binary's command; it may have subcommands (Command). Flags are registered
// with a target in an Options struct; after a successful Parse every flag given on the command
// line has been converted (Abseil's flag parsers: ints, doubles, bools, durations such as "5s")
// and stored in its target; flags not given keep the target's value, which help shows as the
// default.
//
// Accepted spellings: --name=value, --name value, -name (as --name), '-' or '_' in names
// (--llm_model == --llm-model), and for booleans --name, --noname, --name=true|false. --help,
// -h and --helpfull print the help of the command they follow (the program's or a
// subcommand's) on stdout; --version prints the version.
//
// Usage errors are kInvalidArgument with a one-line message naming the flag:
//   unknown flag --bogus=1          flag --verdicts does not apply to 'tasks'
//   flag --out needs a value         flag --out given twice (unless LastValueWins)
//   invalid value 'abc' for --examples: <what was expected>
//   unexpected argument 'extra'<the command's positional hint>
// Main prints them as "<program>[ <subcommand>]: <message> (see <program>[ <subcommand>]
// --help)" and exits 2 (kExitUsage).
//
// Not thread-safe; build, parse and read on one thread (main's).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/flags/marshalling.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/base/exit_codes.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace hb::cli {

// Exit code of every binary for bad usage (flags, and options that fail validation).
using ::hb::kExitUsage;

// One command: the program itself or a subcommand. Owned by its Program.
class Command {
 public:
  Command(CLI::App* app, std::string display_name);
  ~Command();
  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;

  // A flag taking one value, parsed into `*target` (not owned; must outlive Parse). T is any
  // type absl::ParseFlag handles: std::string, bool, int, int64_t, uint32_t, uint64_t, double,
  // absl::Duration. `name` is spelled with dashes and without them in front ("llm-model");
  // `value_name` is shown in help ("N", "PATH"). Help shows the target's current value as the
  // default unless it is empty. Booleans are better added with Bool.
  template <typename T>
  void Flag(const std::string& name, T* target, const std::string& value_name,
            const std::string& help);
  // A boolean flag: --name (true), --noname (false) or --name=true|false.
  void Bool(const std::string& name, bool* target, const std::string& help);
  // A flag that may be given several times; every value is appended to `*target` in order.
  void Repeated(const std::string& name, std::vector<std::string>* target,
                const std::string& value_name, const std::string& help);
  // Positional arguments, appended to `*target`. Without it any positional argument is an
  // error ("unexpected argument 'X'" + `hint`).
  void Positionals(const std::string& value_name, std::vector<std::string>* target,
                   const std::string& help);
  void SetPositionalHint(std::string hint) { positional_hint_ = std::move(hint); }
  // A flag given twice keeps its last value instead of being an error (hb-grader and
  // hb-llm-sim have always taken this, as Abseil flags do: scripts append overrides).
  void LastValueWins() { last_value_wins_ = true; }
  // Help groups: flags added after this call are listed under `title`.
  void Group(std::string title) { group_ = std::move(title); }

  // Whether flag `name` (as registered) was on the command line. Valid after Parse.
  bool Given(const std::string& name) const;

  const std::string& display_name() const { return display_name_; }
  CLI::App* app() { return app_; }

  // Internal: stores the parsed values in the targets; the first usage error otherwise.
  absl::Status Apply() const;

 private:
  struct Binding;
  CLI::Option* AddOption(const std::string& name, const std::string& value_name,
                         const std::string& help, std::string default_text,
                         std::function<bool(const std::string&, std::string*)> set);
  absl::Status CheckExtras() const;

  CLI::App* app_;
  std::string display_name_;
  std::string positional_hint_;
  std::string group_ = "Options";
  bool last_value_wins_ = false;
  std::vector<std::unique_ptr<Binding>> bindings_;
};

// What Parse found.
struct Parsed {
  // The subcommand given; empty for a program without subcommands.
  std::string subcommand;
  // Set when --help or --version was asked for: print it on stdout and exit 0.
  std::optional<std::string> help;
};

class Program {
 public:
  // `name` is the binary's name; `description` opens its help, `footer` closes it (exit codes).
  Program(std::string name, const std::string& description, const std::string& footer = "");
  ~Program();

  // The program's own flags.
  Command& root() { return *root_; }
  // Adds a subcommand; once any exists, one must be given.
  Command& AddSubcommand(const std::string& name, const std::string& description,
                         const std::string& footer = "");

  // Parses `args` (argv without the program name). Errors: kInvalidArgument (see the file
  // comment); the message is prefixed by nothing (Main adds the command's name).
  absl::StatusOr<Parsed> Parse(std::vector<std::string> args);

  // The help text of the program ("") or of one subcommand.
  std::string Help(const std::string& subcommand = "") const;

  // Parses argv and prints help/version/usage errors. Returns nullopt when the program should
  // go on (the subcommand is in `*subcommand`), else the exit code (0 or kExitUsage).
  std::optional<int> ParseOrExit(int argc, char** argv, std::string* subcommand = nullptr);

  // Prints "<name>[ <subcommand>]: <message> (see ... --help)" on stderr (one line) and returns
  // kExitUsage. For options that fail validation after a successful parse.
  int UsageError(const std::string& subcommand, const absl::Status& status) const;

 private:
  Command* Find(const std::string& subcommand) const;

  std::string name_;
  std::unique_ptr<CLI::App> app_;
  std::unique_ptr<Command> root_;
  std::vector<std::unique_ptr<Command>> subcommands_;
};

// The text of an error for stderr, folded onto one line.
std::string OneLine(const absl::Status& status);

// What a DURATION flag takes, for its parse error ("invalid value '5' for --row-timeout:
// expected a duration with a unit, e.g. 5s, 300ms, 2m or 1h30m").
inline constexpr char kDurationForm[] =
    "expected a duration with a unit, e.g. 5s, 300ms, 2m or 1h30m";

template <typename T>
void Command::Flag(const std::string& name, T* target, const std::string& value_name,
                   const std::string& help) {
  AddOption(name, value_name, help, absl::UnparseFlag<T>(*target),
            [target](const std::string& text, std::string* error) {
              if (absl::ParseFlag<T>(text, target, error)) return true;
              if constexpr (std::is_same_v<T, absl::Duration>) *error = kDurationForm;
              return false;
            });
}

}  // namespace hb::cli
