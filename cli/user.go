package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	ucli "github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// `wren user`: SCRAM users, through KIP-554's AlterUserScramCredentials
// and DescribeUserScramCredentials (kadm), as `kafka-configs
// --entity-type users --alter --add-config 'SCRAM-SHA-512=[...]'` does.
// The password never leaves this process: kadm salts it (24 random bytes)
// and sends the salted password, from which the broker keeps only
// StoredKey and ServerKey.

// defaultScramIterations is `wren user create`'s iteration count: twice
// RFC 7677's minimum, within Kafka's 4096 to 16384.
const defaultScramIterations = 8192

func userCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:  "user",
		Usage: "create, delete and list SCRAM users (kafka-configs --entity-type users)",
		Subcommands: []*ucli.Command{
			userCreateCommand(env),
			userDeleteCommand(env),
			userListCommand(env),
		},
	}
}

// parseScramMechanism reads --mechanism.
func parseScramMechanism(s string) (kadm.ScramMechanism, error) {
	switch strings.ToUpper(s) {
	case "SCRAM-SHA-256":
		return kadm.ScramSha256, nil
	case "SCRAM-SHA-512":
		return kadm.ScramSha512, nil
	}
	return 0, fmt.Errorf("%w: --mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", ErrUsage, s)
}

// ---- create ----

func userCreateCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:      "create",
		Usage:     "create a user's SCRAM credential, or replace its password",
		ArgsUsage: "USER",
		Description: "The password is read from --password or, without it, from the first line of standard input " +
			"(asked for without echo on a terminal); --password shows in the process list and the shell's history.",
		Flags: clientFlags(timeoutFlag(),
			&ucli.StringFlag{Name: "mechanism", Aliases: []string{"m"}, Value: "SCRAM-SHA-512", Usage: "SCRAM-SHA-256 or SCRAM-SHA-512"},
			&ucli.IntFlag{Name: "iterations", Value: defaultScramIterations, Usage: "PBKDF2 iterations, 4096 to 16384"},
			&ucli.StringFlag{Name: "password", Usage: "the password (default: read from standard input)"},
		),
		Action: func(c *ucli.Context) error {
			format, err := argsFormat(c, 1, 1, "one USER")
			if err != nil {
				return err
			}
			user := c.Args().First()
			mech, err := parseScramMechanism(c.String("mechanism"))
			if err != nil {
				return err
			}
			iterations := c.Int("iterations")
			if iterations < 4096 || iterations > 16384 {
				return fmt.Errorf("%w: --iterations %d: want 4096 to 16384", ErrUsage, iterations)
			}
			password := c.String("password")
			if !c.IsSet("password") {
				if password, err = readPassword(env, user); err != nil {
					return err
				}
			}
			if password == "" {
				return fmt.Errorf("%w: an empty password", ErrUsage)
			}
			return runAdmin(c, func(ctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
				res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: mech, Iterations: int32(iterations), Password: password}})
				if err != nil {
					return fmt.Errorf("cli: create user %s: %w", user, err)
				}
				r, ok := res[user]
				if !ok {
					return fmt.Errorf("cli: create user %s: no response", user)
				}
				if err := kafkaErr("create user "+user, r.Err, r.ErrMessage); err != nil {
					return err
				}
				out := userCredential{User: user, Credentials: []credentialInfo{{Mechanism: mech.String(), Iterations: int32(iterations)}}}
				return printResult(env.Stdout, format, out, func(w io.Writer) {
					fmt.Fprintf(w, "Set the %s credential of user %s (%d iterations).\n", mech, user, iterations)
				})
			})
		},
	}
}

// readPassword reads the password: without echo from a terminal, else
// the first line of standard input.
func readPassword(env Env, user string) (string, error) {
	if f, ok := env.Stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(env.Stderr, "Password for %s: ", user)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(env.Stderr)
		if err != nil {
			return "", fmt.Errorf("cli: read the password: %w", err)
		}
		return string(b), nil
	}
	line, err := bufio.NewReader(env.Stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("cli: read the password from standard input: %w", err)
	}
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if line == "" {
		return "", fmt.Errorf("%w: no password: give --password or a line on standard input", ErrUsage)
	}
	return line, nil
}

// ---- delete ----

func userDeleteCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:      "delete",
		Usage:     "delete users' SCRAM credentials",
		ArgsUsage: "USER...",
		Flags: clientFlags(timeoutFlag(),
			&ucli.StringFlag{Name: "mechanism", Aliases: []string{"m"}, Usage: "delete only this mechanism's credential (default: every one the user has)"}),
		Action: func(c *ucli.Context) error {
			format, err := argsFormat(c, 1, -1, "at least one USER")
			if err != nil {
				return err
			}
			var only kadm.ScramMechanism
			if c.IsSet("mechanism") {
				if only, err = parseScramMechanism(c.String("mechanism")); err != nil {
					return err
				}
			}
			users := c.Args().Slice()
			return runAdmin(c, func(ctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
				return deleteUsers(ctx, env.Stdout, format, adm, users, only)
			})
		},
	}
}

type deletedCredential struct {
	User      string `json:"user"`
	Mechanism string `json:"mechanism"`
}

// deleteUsers deletes the users' credentials of mechanism only, or of
// every mechanism each has (described first). A request names a user
// once (Kafka refuses it twice), so there is one request per mechanism.
func deleteUsers(ctx context.Context, w io.Writer, format outputFormat, adm *kadm.Client, users []string, only kadm.ScramMechanism) error {
	var firstErr error
	byMech := map[kadm.ScramMechanism][]string{}
	if only != 0 {
		byMech[only] = users
	} else {
		described, err := adm.DescribeUserSCRAMs(ctx, users...)
		if err != nil {
			return fmt.Errorf("cli: describe users: %w", err)
		}
		for _, u := range users {
			d, ok := described[u]
			if !ok {
				firstErr = cmpErr(firstErr, fmt.Errorf("cli: delete user %s: no response", u))
				continue
			}
			if err := kafkaErr("delete user "+u, d.Err, d.ErrMessage); err != nil {
				firstErr = cmpErr(firstErr, err)
				continue
			}
			for _, ci := range d.CredInfos {
				byMech[ci.Mechanism] = append(byMech[ci.Mechanism], u)
			}
		}
	}
	var deleted []deletedCredential
	for _, mech := range []kadm.ScramMechanism{kadm.ScramSha256, kadm.ScramSha512} {
		if len(byMech[mech]) == 0 {
			continue
		}
		var dels []kadm.DeleteSCRAM
		seen := map[string]bool{}
		for _, u := range byMech[mech] {
			if !seen[u] {
				seen[u] = true
				dels = append(dels, kadm.DeleteSCRAM{User: u, Mechanism: mech})
			}
		}
		res, err := adm.AlterUserSCRAMs(ctx, dels, nil)
		if err != nil {
			return cmpErr(firstErr, fmt.Errorf("cli: delete users: %w", err))
		}
		for _, d := range dels {
			r, ok := res[d.User]
			switch {
			case !ok:
				firstErr = cmpErr(firstErr, fmt.Errorf("cli: delete user %s: no response", d.User))
			case r.Err != nil:
				firstErr = cmpErr(firstErr, kafkaErr("delete the "+mech.String()+" credential of user "+d.User, r.Err, r.ErrMessage))
			default:
				deleted = append(deleted, deletedCredential{User: d.User, Mechanism: mech.String()})
			}
		}
	}
	err := printResult(w, format, deleted, func(w io.Writer) {
		for _, d := range deleted {
			fmt.Fprintf(w, "Deleted the %s credential of user %s.\n", d.Mechanism, d.User)
		}
	})
	return cmpErr(firstErr, err)
}

// ---- list ----

type credentialInfo struct {
	Mechanism  string `json:"mechanism"`
	Iterations int32  `json:"iterations"`
}

type userCredential struct {
	User        string           `json:"user"`
	Credentials []credentialInfo `json:"credentials"`
}

func userListCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:      "list",
		Aliases:   []string{"ls"},
		Usage:     "list SCRAM users and their mechanisms (every user, or those named)",
		ArgsUsage: "[USER...]",
		Flags:     clientFlags(timeoutFlag()),
		Action: func(c *ucli.Context) error {
			format, err := argsFormat(c, 0, -1, "USER names or nothing")
			if err != nil {
				return err
			}
			return runAdmin(c, func(ctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
				described, err := adm.DescribeUserSCRAMs(ctx, c.Args().Slice()...)
				if err != nil {
					return fmt.Errorf("cli: describe users: %w", err)
				}
				var firstErr error
				list := []userCredential{}
				for _, d := range described.Sorted() {
					if errors.Is(d.Err, kerr.ResourceNotFound) {
						firstErr = cmpErr(firstErr, fmt.Errorf("cli: user %s has no SCRAM credential: %w", d.User, d.Err))
						continue
					}
					if err := kafkaErr("describe user "+d.User, d.Err, d.ErrMessage); err != nil {
						firstErr = cmpErr(firstErr, err)
						continue
					}
					uc := userCredential{User: d.User, Credentials: []credentialInfo{}}
					for _, ci := range d.CredInfos {
						uc.Credentials = append(uc.Credentials, credentialInfo{Mechanism: ci.Mechanism.String(), Iterations: ci.Iterations})
					}
					list = append(list, uc)
				}
				err = printResult(env.Stdout, format, list, func(w io.Writer) {
					for _, uc := range list {
						var parts []string
						for _, ci := range uc.Credentials {
							parts = append(parts, fmt.Sprintf("%s (%d iterations)", ci.Mechanism, ci.Iterations))
						}
						fmt.Fprintf(w, "%s\t%s\n", uc.User, strings.Join(parts, ", "))
					}
				})
				return cmpErr(firstErr, err)
			})
		},
	}
}
