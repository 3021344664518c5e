package config

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// A value is held as one of: bool, int64 (INT, SHORT and LONG alike, range
// checked for their width), float64, string, []string (never nil), or nil
// for a setting that has no value (Kafka's null default, as log.retention.ms).

type validatorKind int8

const (
	vRange validatorKind = iota + 1
	vRangeDouble
	vOneOf
	vList
	vFunc
)

// Validator checks a value beyond its type, as the validators of Kafka's
// ConfigDef do (Range, ValidString, ValidList). Its reasons use Kafka's
// words, because AlterConfigs hands them to clients unchanged.
type Validator struct {
	kind     validatorKind
	lo, hi   int64   // vRange
	loF, hiF float64 // vRangeDouble
	oneOf    []string
	fn       func(any) error // vFunc
	desc     string
}

// String is the "Valid Values" column of Kafka's documentation.
func (v *Validator) String() string {
	if v == nil {
		return ""
	}
	return v.desc
}

// Check returns nil if x is acceptable, else the reason it is not.
func (v *Validator) Check(x any) error {
	if v == nil || x == nil {
		return nil
	}
	switch v.kind {
	case vRange:
		n := x.(int64)
		if n < v.lo {
			return fmt.Errorf("Value must be at least %d", v.lo)
		}
		if n > v.hi {
			return fmt.Errorf("Value must be no more than %d", v.hi)
		}
	case vRangeDouble:
		f := x.(float64)
		if math.IsNaN(f) || f < v.loF {
			return fmt.Errorf("Value must be at least %s", formatDouble(v.loF))
		}
		if f > v.hiF {
			return fmt.Errorf("Value must be no more than %s", formatDouble(v.hiF))
		}
	case vOneOf:
		if !slices.Contains(v.oneOf, x.(string)) {
			return fmt.Errorf("allowed values are %s", strings.Join(v.oneOf, ", "))
		}
	case vList:
		l := x.([]string)
		if len(l) == 0 {
			return fmt.Errorf("List must not be empty")
		}
		for i, s := range l {
			if !slices.Contains(v.oneOf, s) {
				return fmt.Errorf("%q is not allowed; allowed values are %s", s, strings.Join(v.oneOf, ", "))
			}
			if slices.Contains(l[:i], s) {
				return fmt.Errorf("Values must not be duplicated: %s", s)
			}
		}
	case vFunc:
		return v.fn(x)
	}
	return nil
}

// atLeast is Kafka's Range.atLeast for integer settings.
func atLeast(lo int64) *Validator {
	return &Validator{kind: vRange, lo: lo, hi: math.MaxInt64, desc: fmt.Sprintf("[%d,...]", lo)}
}

// between is Kafka's Range.between for integer settings.
func between(lo, hi int64) *Validator {
	return &Validator{kind: vRange, lo: lo, hi: hi, desc: fmt.Sprintf("[%d,...,%d]", lo, hi)}
}

// betweenDouble is Kafka's Range.between for double settings.
func betweenDouble(lo, hi float64) *Validator {
	return &Validator{kind: vRangeDouble, loF: lo, hiF: hi,
		desc: fmt.Sprintf("[%s,...,%s]", formatDouble(lo), formatDouble(hi))}
}

// oneOf is Kafka's ValidString.in (case-sensitive).
func oneOf(values ...string) *Validator {
	return &Validator{kind: vOneOf, oneOf: values, desc: "[" + strings.Join(values, ", ") + "]"}
}

// listOf is Kafka's ValidList.in: a non-empty list of distinct members of values.
func listOf(values ...string) *Validator {
	return &Validator{kind: vList, oneOf: values, desc: "[" + strings.Join(values, ", ") + "]"}
}

// custom wraps a check that the forms above cannot say.
func custom(desc string, fn func(any) error) *Validator {
	return &Validator{kind: vFunc, fn: fn, desc: desc}
}

// widthRange is the range an integer type holds.
func widthRange(t Type) (lo, hi int64) {
	switch t {
	case TypeShort:
		return math.MinInt16, math.MaxInt16
	case TypeInt:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

func isInteger(t Type) bool { return t == TypeInt || t == TypeShort || t == TypeLong }

// parseString converts a value given as text (AlterConfigs, CreateTopics,
// server.properties) the way Kafka's ConfigDef.parseType does: surrounding
// spaces are trimmed, booleans are case-insensitive, lists are
// comma-separated. The reason is Kafka's.
func parseString(t Type, s string) (any, error) {
	s = strings.TrimSpace(s)
	switch t {
	case TypeBoolean:
		switch {
		case strings.EqualFold(s, "true"):
			return true, nil
		case strings.EqualFold(s, "false"):
			return false, nil
		}
		return nil, fmt.Errorf("Expected value to be either true or false")
	case TypeInt, TypeShort, TypeLong:
		lo, hi := widthRange(t)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < lo || n > hi {
			return nil, fmt.Errorf("Not a number of type %s", t)
		}
		return n, nil
	case TypeDouble:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("Not a number of type %s", t)
		}
		return f, nil
	case TypeString:
		return s, nil
	case TypeList:
		return splitList(s), nil
	}
	panic(fmt.Sprintf("config: parseString: unknown type %d", t))
}

// splitList splits a comma-separated list, trimming each element; the empty
// string is the empty list.
func splitList(s string) []string {
	if strings.TrimSpace(s) == "" {
		return []string{}
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// formatString renders a value as DescribeConfigs reports it (Kafka's
// ConfigDef.convertToString).
func formatString(v any) string {
	switch x := v.(type) {
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return formatDouble(x)
	case string:
		return x
	case []string:
		return strings.Join(x, ",")
	}
	panic(fmt.Sprintf("config: formatString: unexpected %T", v))
}

// formatDouble prints a double so that it reads back as a double, in TOML
// and in Java: always with a decimal point or an exponent.
func formatDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}
