// Package usage turns a go-arg parse error into one line that says what was
// wrong and how to fix it: the nearest command or flag for a typo, what a
// flag's value must be, the flag a required value belongs to, and where the
// full help is (PROGRAM ... --help), instead of the whole usage.
//
// It reads command structs by reflection over go-arg's tags (subcommand:,
// the long flags, placeholder:, help:) and knows no command of its own: the
// caller names the top command struct, the flag structs every command also
// takes, the value kinds of its own flag types, and how to tell a program
// on the PATH, so the explanation is a pure function, table-tested.
//
// It is not in runconfig, which is the training options' table and config
// file: this explains every command's flags (plan's, bench's, the
// launcher's), whose types runconfig must not import. It imports runconfig
// only for the nearest-name search and the kind names the config file's
// errors use too, so both speak alike; never launch, ranks or cmd.
package usage
