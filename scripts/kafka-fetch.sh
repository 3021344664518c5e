#!/usr/bin/env bash
# kafka-fetch.sh: fetch Apache Kafka (broker + tools) and every runtime dependency from
# Maven Central into a local cache, for use as a reference broker in tests, benchmarks and
# golden-data generation. Kafka's code is never committed to this repository; this script
# brings it to the machine that needs it.
#
# Usage: scripts/kafka-fetch.sh
#
# Environment:
#   WREN_KAFKA_VERSION  Kafka version to fetch (default 4.1.1; Kafka 4.x needs Java 17+).
#   WREN_KAFKA_HOME     cache directory (default $HOME/.cache/wren/kafka-<version>).
#
# Result (printed on stdout, one line): the classpath directory, <home>/libs, holding every jar;
# run Kafka with `java -cp "<home>/libs/*" ...`. Beside it, <home>/config/log4j2.yaml is a quiet
# logging configuration (WARN to stderr). Idempotent: a completed fetch is detected by a stamp
# file and nothing is downloaded again. Progress and errors go to stderr.
#
# Needs: java (17+) and mvn (3.8+) on PATH, and access to Maven Central.
set -euo pipefail

version="${WREN_KAFKA_VERSION:-4.1.1}"
home="${WREN_KAFKA_HOME:-$HOME/.cache/wren/kafka-$version}"
libs="$home/libs"
stamp="$home/.fetched"

# Versions of the pieces added beside Kafka. Kafka 4.x logs through SLF4J 1.7 (its poms pin
# slf4j-api 1.7.36) and its binary distribution ships log4j2 as the backend, but the poms do not
# pull a backend in; without one SLF4J prints a NOP warning and the broker logs nothing. So we add
# log4j-core and log4j-slf4j-impl, the binding for SLF4J 1.x (log4j-slf4j2-impl would need
# slf4j-api 2.x, which Maven's nearest-wins resolution does not select here).
log4j_version="2.24.3"
dependency_plugin="org.apache.maven.plugins:maven-dependency-plugin:3.8.1"

write_logging_config() {
	mkdir -p "$home/config"
	cat >"$home/config/log4j2.yaml" <<'LOG'
# Quiet logging for the reference broker and tools: warnings and errors to stderr only.
Configuration:
  Appenders:
    Console:
      name: STDERR
      target: SYSTEM_ERR
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: WARN
      AppenderRef:
        - ref: STDERR
    Logger:
      # kafka-run.sh waits for this logger's "Kafka Server started" line.
      - name: kafka.server.KafkaRaftServer
        level: INFO
LOG
}

# A throwaway project whose only job is to name the artifacts; copy-dependencies resolves the
# transitive runtime closure exactly as Maven would for an application depending on them.
pom="$(cat <<POM
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>wren.reference</groupId>
  <artifactId>kafka-classpath</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_2.13</artifactId>
      <version>$version</version>
    </dependency>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka-tools</artifactId>
      <version>$version</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>$log4j_version</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-core</artifactId>
      <version>$log4j_version</version>
    </dependency>
  </dependencies>
</project>
POM
)"

# The stamp holds the pom it was made from: a changed list of artifacts fetches again.
if [[ -f "$stamp" && "$(cat "$stamp")" == "$pom" && -d "$libs" ]]; then
	write_logging_config
	echo "$libs"
	exit 0
fi

for tool in java mvn; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "kafka-fetch: $tool not found on PATH" >&2
		exit 1
	fi
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

printf '%s\n' "$pom" >"$work/pom.xml"

echo "kafka-fetch: resolving Kafka $version and its dependencies (Maven) ..." >&2
mkdir -p "$home"
rm -rf "$libs.partial"
if ! mvn -B -Dstyle.color=never -f "$work/pom.xml" "$dependency_plugin:copy-dependencies" \
	-DincludeScope=runtime -DoutputDirectory="$libs.partial" >"$work/mvn.log" 2>&1; then
	cat "$work/mvn.log" >&2
	echo "kafka-fetch: Maven could not resolve Kafka $version" >&2
	exit 1
fi

# Every jar the server, the tools and the codecs need must be there; fail now rather than with a
# ClassNotFoundException in the middle of a test run.
for want in "kafka_2.13-$version.jar" "kafka-tools-$version.jar" "kafka-clients-$version.jar" \
	"kafka-storage-$version.jar" "log4j-core-$log4j_version.jar"; do
	if [[ ! -f "$libs.partial/$want" ]]; then
		echo "kafka-fetch: $want missing from the resolved classpath" >&2
		exit 1
	fi
done
for codec in snappy-java lz4-java zstd-jni; do
	if ! compgen -G "$libs.partial/$codec-*.jar" >/dev/null; then
		echo "kafka-fetch: codec jar $codec missing from the resolved classpath" >&2
		exit 1
	fi
done

rm -rf "$libs"
mv "$libs.partial" "$libs"

write_logging_config

printf '%s' "$pom" >"$stamp"
echo "$libs"
