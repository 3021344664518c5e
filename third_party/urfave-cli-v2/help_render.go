package cli

// Patched for wren: plain-Go renderings of AppHelpTemplate,
// CommandHelpTemplate and SubcommandHelpTemplate (template.go), written
// to give byte for byte what text/template gives for them; wren's
// cli/help_test.go checks that against text/template over every command.

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// The default templates as shipped; renderHelp renders these and no
// others, even when the exported variables are changed.
var (
	defaultAppHelpTemplate        = AppHelpTemplate
	defaultCommandHelpTemplate    = CommandHelpTemplate
	defaultSubcommandHelpTemplate = SubcommandHelpTemplate
)

// helpData is what the default templates read of an *App or a *Command.
type helpData struct {
	helpName, usage, usageText, argsUsage, description string
	category, version, copyright                       string
	args, hideVersion                                  bool
	commands                                           []*Command
	authors                                            []*Author
	visibleFlags                                       []Flag
	visibleCommands                                    []*Command
	// visibleCategories is called only when there are visible commands,
	// as the templates do: a Command not set up has no categories and
	// its VisibleCategories panics.
	visibleCategories func() []CommandCategory
	flagCategories    []VisibleFlagCategory
}

func renderHelp(w io.Writer, templ string, data interface{}, wrapAt int) error {
	var d helpData
	switch v := data.(type) {
	case *App:
		d = helpData{helpName: v.HelpName, usage: v.Usage, usageText: v.UsageText, argsUsage: v.ArgsUsage,
			description: v.Description, version: v.Version, copyright: v.Copyright, args: v.Args,
			hideVersion: v.HideVersion, commands: v.Commands, authors: v.Authors,
			visibleFlags: v.VisibleFlags(), visibleCommands: v.VisibleCommands(),
			visibleCategories: v.VisibleCategories, flagCategories: v.VisibleFlagCategories()}
	case *Command:
		d = helpData{helpName: v.HelpName, usage: v.Usage, usageText: v.UsageText, argsUsage: v.ArgsUsage,
			description: v.Description, category: v.Category, args: v.Args,
			visibleFlags: v.VisibleFlags(), visibleCommands: v.VisibleCommands(),
			visibleCategories: v.VisibleCategories, flagCategories: v.VisibleFlagCategories()}
	default:
		return errors.New("cli: help for a value that is neither *App nor *Command")
	}
	// As with text/template, a panic in a method (VisibleCategories of a
	// Command that was not set up, as for `app help cmd`) ends the
	// rendering with an error, and what was rendered before it still
	// reaches w, which the caller then does not flush.
	var b strings.Builder
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("cli: rendering help: %v", r)
			}
		}()
		switch templ {
		case defaultAppHelpTemplate:
			d.appHelp(&b, wrapAt)
		case defaultCommandHelpTemplate:
			d.commandHelp(&b, wrapAt, false)
		case defaultSubcommandHelpTemplate:
			if _, isApp := data.(*App); isApp {
				return errors.New("cli: the subcommand help template for an *App")
			}
			d.commandHelp(&b, wrapAt, true)
		default:
			return errors.New("cli: custom help templates are not supported in this build")
		}
		return nil
	}()
	if _, werr := io.WriteString(w, b.String()); err == nil {
		err = werr
	}
	return err
}

// helpNameTemplate
func (d *helpData) name(b *strings.Builder, wrapAt int) {
	b.WriteString(wrap(d.helpName, 3, wrapAt))
	if d.usage != "" {
		b.WriteString(" - " + wrap(d.usage, offset(d.helpName, 6), wrapAt))
	}
}

// the tail of usageTemplate and of AppHelpTemplate's USAGE
func (d *helpData) argsTail(b *strings.Builder) {
	if d.argsUsage != "" {
		b.WriteString(" " + d.argsUsage)
	} else if d.args {
		b.WriteString(" [arguments...]")
	}
}

func (d *helpData) appHelp(b *strings.Builder, wrapAt int) {
	b.WriteString("NAME:\n   ")
	d.name(b, wrapAt)
	b.WriteString("\n\nUSAGE:\n   ")
	if d.usageText != "" {
		b.WriteString(wrap(d.usageText, 3, wrapAt))
	} else {
		b.WriteString(d.helpName + " ")
		if len(d.visibleFlags) > 0 {
			b.WriteString("[global options]")
		}
		if len(d.commands) > 0 {
			b.WriteString(" command [command options]")
		}
		d.argsTail(b)
	}
	if d.version != "" && !d.hideVersion {
		b.WriteString("\n\nVERSION:\n   " + d.version)
	}
	if d.description != "" {
		b.WriteString("\n\nDESCRIPTION:\n   " + wrap(d.description, 3, wrapAt))
	}
	if len(d.authors) > 0 {
		b.WriteString("\n\nAUTHOR")
		if len(d.authors) != 1 {
			b.WriteString("S")
		}
		b.WriteString(":\n   ")
		for i, a := range d.authors {
			if i > 0 {
				b.WriteString("\n   ")
			}
			b.WriteString(a.String())
		}
	}
	if len(d.visibleCommands) > 0 {
		b.WriteString("\n\nCOMMANDS:")
		d.commandCategories(b, wrapAt)
	}
	d.options(b, "GLOBAL OPTIONS:", wrapAt)
	if d.copyright != "" {
		b.WriteString("\n\nCOPYRIGHT:\n   " + wrap(d.copyright, 3, wrapAt))
	}
	b.WriteString("\n")
}

// CommandHelpTemplate, or SubcommandHelpTemplate when sub
func (d *helpData) commandHelp(b *strings.Builder, wrapAt int, sub bool) {
	b.WriteString("NAME:\n   ")
	d.name(b, wrapAt)
	b.WriteString("\n\nUSAGE:\n   ")
	if d.usageText != "" {
		b.WriteString(wrap(d.usageText, 3, wrapAt))
	} else {
		b.WriteString(d.helpName)
		if len(d.visibleFlags) > 0 {
			b.WriteString(" [command options]")
		}
		d.argsTail(b)
	}
	if d.category != "" {
		b.WriteString("\n\nCATEGORY:\n   " + d.category)
	}
	if d.description != "" {
		b.WriteString("\n\nDESCRIPTION:\n   " + wrap(d.description, 3, wrapAt))
	}
	if sub && len(d.visibleCommands) > 0 {
		b.WriteString("\n\nCOMMANDS:")
		d.commandCategories(b, wrapAt)
	}
	d.options(b, "OPTIONS:", wrapAt)
	b.WriteString("\n")
}

// visibleCommandCategoryTemplate
func (d *helpData) commandCategories(b *strings.Builder, wrapAt int) {
	for _, c := range d.visibleCategories() {
		if c.Name() == "" {
			visibleCommands(b, c.VisibleCommands(), wrapAt)
			continue
		}
		b.WriteString("\n   " + c.Name() + ":")
		for _, cmd := range c.VisibleCommands() {
			b.WriteString("\n     " + strings.Join(cmd.Names(), ", ") + "\t" + cmd.Usage)
		}
	}
}

// visibleCommandTemplate
func visibleCommands(b *strings.Builder, cmds []*Command, wrapAt int) {
	cv := offsetCommands(cmds, 5)
	for _, cmd := range cmds {
		s := strings.Join(cmd.Names(), ", ")
		b.WriteString("\n   " + s + indent(subtract(cv, offset(s, 3)), "") + wrap(cmd.Usage, cv, wrapAt))
	}
}

// the OPTIONS part: visibleFlagCategoryTemplate, else visibleFlagTemplate
func (d *helpData) options(b *strings.Builder, heading string, wrapAt int) {
	if len(d.flagCategories) > 0 {
		b.WriteString("\n\n" + heading)
		for _, c := range d.flagCategories {
			b.WriteString("\n   ")
			if c.Name() != "" {
				b.WriteString(c.Name() + "\n\n   ")
			}
			flags := c.Flags()
			for i, f := range flags {
				b.WriteString(f.String())
				if i == len(flags)-1 {
					b.WriteString("\n")
				} else {
					b.WriteString("\n   ")
				}
			}
		}
	} else if len(d.visibleFlags) > 0 {
		b.WriteString("\n\n" + heading)
		for _, f := range d.visibleFlags {
			b.WriteString("\n   " + wrap(f.String(), 6, wrapAt))
		}
	}
}
