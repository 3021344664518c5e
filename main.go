// Command wren is a Kafka-compatible message broker (`wren serve`) and its
// admin tools. This file only wires the process to package cli: streams,
// signals and the exit status.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/wren-broker/wren/broker"
	"github.com/wren-broker/wren/cli"
)

func main() {
	// SIGINT and SIGTERM cancel the context: `wren serve` shuts down in
	// order, consume and produce stop and print their summaries.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	serve := func(ctx context.Context, o cli.ServeOptions) error {
		return broker.ServeFile(ctx, o.ConfigPath, o.LogLevel, o.NodeID)
	}
	code := cli.Main(ctx, cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Serve: serve}, os.Args)
	stop()
	os.Exit(code)
}
