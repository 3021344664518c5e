package config

import "fmt"

// Type is a setting's value type. The numbers are DescribeConfigs'
// ConfigType (v3+), so the wire layer can send them as they are.
// Part of the wire protocol; never change.
type Type int8

const (
	TypeBoolean Type = 1
	TypeString  Type = 2
	TypeInt     Type = 3 // 32-bit signed
	TypeShort   Type = 4 // 16-bit signed
	TypeLong    Type = 5 // 64-bit signed
	TypeDouble  Type = 6
	TypeList    Type = 7 // of strings
)

func (t Type) String() string {
	switch t {
	case TypeBoolean:
		return "BOOLEAN"
	case TypeString:
		return "STRING"
	case TypeInt:
		return "INT"
	case TypeShort:
		return "SHORT"
	case TypeLong:
		return "LONG"
	case TypeDouble:
		return "DOUBLE"
	case TypeList:
		return "LIST"
	}
	return fmt.Sprintf("Type(%d)", int8(t))
}

// word is the type as Kafka's documentation tables spell it.
func (t Type) word() string {
	switch t {
	case TypeBoolean:
		return "boolean"
	case TypeString:
		return "string"
	case TypeInt:
		return "int"
	case TypeShort:
		return "short"
	case TypeLong:
		return "long"
	case TypeDouble:
		return "double"
	case TypeList:
		return "list"
	}
	return t.String()
}

// Importance is Kafka's ConfigDef importance: how likely an operator is to
// need the setting.
type Importance int8

const (
	High Importance = iota
	Medium
	Low
)

func (i Importance) String() string {
	switch i {
	case High:
		return "high"
	case Medium:
		return "medium"
	case Low:
		return "low"
	}
	return fmt.Sprintf("Importance(%d)", int8(i))
}

// Mode says whether a setting may change while the broker runs, in the
// three update modes of Kafka's DynamicBrokerConfig.
type Mode int8

const (
	// ReadOnly settings come only from the file; changing one takes a restart.
	ReadOnly Mode = iota
	// PerBroker settings may be altered for one broker (resource name = node id).
	PerBroker
	// ClusterWide settings may be altered for one broker or as the
	// cluster-wide default (empty resource name).
	ClusterWide
)

func (m Mode) String() string {
	switch m {
	case ReadOnly:
		return "read-only"
	case PerBroker:
		return "per-broker"
	case ClusterWide:
		return "cluster-wide"
	}
	return fmt.Sprintf("Mode(%d)", int8(m))
}

// Source says where a described value came from. The numbers are
// DescribeConfigs' ConfigSource. Part of the wire protocol; never change.
type Source int8

const (
	SourceUnknown              Source = 0
	SourceDynamicTopic         Source = 1 // DYNAMIC_TOPIC_CONFIG: a topic override
	SourceDynamicBroker        Source = 2 // DYNAMIC_BROKER_CONFIG: altered for this broker
	SourceDynamicDefaultBroker Source = 3 // DYNAMIC_DEFAULT_BROKER_CONFIG: altered cluster-wide
	SourceStaticBroker         Source = 4 // STATIC_BROKER_CONFIG: set in the file
	SourceDefault              Source = 5 // DEFAULT_CONFIG: built in
)

func (s Source) String() string {
	switch s {
	case SourceDynamicTopic:
		return "DYNAMIC_TOPIC_CONFIG"
	case SourceDynamicBroker:
		return "DYNAMIC_BROKER_CONFIG"
	case SourceDynamicDefaultBroker:
		return "DYNAMIC_DEFAULT_BROKER_CONFIG"
	case SourceStaticBroker:
		return "STATIC_BROKER_CONFIG"
	case SourceDefault:
		return "DEFAULT_CONFIG"
	}
	return "UNKNOWN"
}
