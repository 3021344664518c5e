package config

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrInvalid is what every error from Load and Parse wraps, except an
	// I/O error or ErrFileTooLarge. The error itself is an Errors.
	ErrInvalid = errors.New("config: invalid configuration")
	// ErrFileTooLarge: the file is over MaxFileBytes.
	ErrFileTooLarge = errors.New("config: file too large")

	// The sentinels of ValidateTopicConfig, ValidateBrokerConfig and the
	// Describe/Topic resolvers, all wrapped in an *AlterError.
	ErrUnknownConfig = errors.New("config: unknown config")
	ErrInvalidValue  = errors.New("config: invalid config value")
	ErrNotDynamic    = errors.New("config: config cannot be altered at run time")
)

// Position is a place in the config file; lines and columns count from 1,
// columns in bytes.
type Position struct {
	Line, Column int
}

// Error is one problem with a config file.
type Error struct {
	File string
	// Pos is where in the file; zero when the problem belongs to no line.
	Pos Position
	// Key is the setting's flattened name, "" for syntax errors.
	Key string
	Msg string
}

func (e *Error) Error() string {
	if e.Pos.Line == 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Pos.Line, e.Pos.Column, e.Msg)
}

// Errors is every problem found in one file, in file order; problems tied
// to no line come last.
type Errors []*Error

func (es Errors) Error() string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Is makes errors.Is(err, ErrInvalid) hold.
func (es Errors) Is(target error) bool { return target == ErrInvalid }

// AlterError is a refused config name or value in Kafka's own words: Message
// goes to the client as the error message of CreateTopics, AlterConfigs or
// IncrementalAlterConfigs (error code INVALID_CONFIG, or INVALID_REQUEST for
// ErrNotDynamic), so it carries no package prefix.
type AlterError struct {
	// Err is ErrUnknownConfig, ErrInvalidValue or ErrNotDynamic.
	Err     error
	Message string
}

func (e *AlterError) Error() string { return e.Message }
func (e *AlterError) Unwrap() error { return e.Err }

func invalidValue(name, value string, reason error) *AlterError {
	return &AlterError{Err: ErrInvalidValue,
		Message: fmt.Sprintf("Invalid value %s for configuration %s: %v", value, name, reason)}
}
