// Command dockerlint checks a Dockerfile with the parser and the lint
// rules of BuildKit, the builder behind `docker build`, so the Dockerfile
// is checked on machines without a Docker engine. It exits non-zero on a
// parse error or any lint warning.
//
// It is a module of its own so that BuildKit and its dependencies stay
// out of Giraffe's module.
package main

import (
	"fmt"
	"os"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: dockerlint DOCKERFILE")
		os.Exit(2)
	}
	path := os.Args[1]
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
		os.Exit(1)
	}
	problems := 0
	for _, w := range res.Warnings {
		fmt.Fprintf(os.Stderr, "%s: %s\n", path, w.Short)
		problems++
	}
	lint := linter.New(&linter.Config{
		Warn: func(rule, _, _, msg string, loc []parser.Range) {
			line := 0
			if len(loc) > 0 {
				line = loc[0].Start.Line
			}
			fmt.Fprintf(os.Stderr, "%s:%d: %s: %s\n", path, line, rule, msg)
			problems++
		},
	})
	stages, _, err := instructions.Parse(res.AST, lint)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
		os.Exit(1)
	}
	if problems > 0 {
		os.Exit(1)
	}
	fmt.Printf("%s: %d stages, no warnings\n", path, len(stages))
}
