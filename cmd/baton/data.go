package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton"
)

// Jobs as data on the command line: queue push --meta and --tag, queue
// list --tag and --meta, queue get's metadata, tags and output, queue
// update, and work --output.

// jsonObjectFlag is a flag whose value is a JSON object (checked by the
// library, which names the problem).
type jsonObjectFlag struct{ v *json.RawMessage }

func (f jsonObjectFlag) String() string {
	if f.v == nil {
		return ""
	}
	return string(*f.v)
}

func (f jsonObjectFlag) Set(s string) error {
	*f.v = json.RawMessage(s)
	return nil
}

func (jsonObjectFlag) Type() string { return "JSON" }

// metaMatchFlag is queue list's --meta KEY=VALUE.
type metaMatchFlag struct{ o *baton.ListOptions }

func (f metaMatchFlag) String() string {
	if f.o == nil || f.o.MetaKey == "" {
		return ""
	}
	return f.o.MetaKey + "=" + f.o.MetaValue
}

func (f metaMatchFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: give KEY=VALUE", s)
	}
	f.o.MetaKey, f.o.MetaValue = k, v
	return nil
}

func (metaMatchFlag) Type() string { return "KEY=VALUE" }

// pushDataFlags adds queue push's --meta, --tag and --unique-args.
func pushDataFlags(cmd *cobra.Command, o *baton.EnqueueOptions) {
	cmd.Flags().Var(jsonObjectFlag{&o.Metadata}, "meta", fmt.Sprintf("the message's metadata, a JSON object (at most %d bytes), shown by queue get", baton.MaxMetadata))
	cmd.Flags().StringArrayVar(&o.Tags, "tag", nil, fmt.Sprintf("a tag of the message (repeat for more, at most %d; like a queue name); queue list --tag finds it", baton.MaxTags))
	cmd.Flags().BoolVar(&o.UniqueByArgs, "unique-args", false, "unique by the payload: add nothing while a message of the same kind with an equal payload (JSON compared canonically) waits or runs (see --unique-for, --unique-states)")
}

// listDataFlags adds queue list's --tag and --meta.
func listDataFlags(cmd *cobra.Command, o *baton.ListOptions) {
	cmd.Flags().StringVar(&o.Tag, "tag", "", "only messages with this tag")
	cmd.Flags().Var(metaMatchFlag{o}, "meta", "only messages whose metadata has KEY with VALUE (a string, or a number or boolean as JSON writes it)")
}

// dataFields are the metadata, tags and output queue get shows, when set.
func dataFields(m baton.MessageInfo) [][2]string {
	var fields [][2]string
	if len(m.Tags) > 0 {
		fields = append(fields, [2]string{"tags", strings.Join(m.Tags, ", ")})
	}
	if m.Metadata != nil {
		fields = append(fields, [2]string{"metadata", clip(string(m.Metadata), 200)})
	}
	if m.Output != nil {
		fields = append(fields, [2]string{"output", clip(string(m.Output), 200)})
	}
	return fields
}

func queueUpdateCmd(g *globals) *cobra.Command {
	var u baton.MessageUpdate
	cmd := &cobra.Command{
		Use:   "update ID --meta JSON",
		Short: "Change the metadata of a message, whatever its state",
		Long: `Merge JSON, an object, into the metadata of message ID, whether it waits, runs
or has finished (while its history is kept), as a JSON merge patch (RFC
7396): each key given is set, a key given as null is removed, a key whose
value is an object is merged key by key, and the other keys are kept.
Bad JSON (not an object) exits 64 and changes nothing.

` + messageExits,
		Example: `  baton queue update 42 --meta '{"reviewed_by":"ann"}'
  baton queue update 42 --meta '{"reviewed_by":null}'`,
		Args: argsUsage("queue update", 1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if u.Metadata == nil {
				return usageErr("queue update: give --meta JSON")
			}
			return onID(cmd, g, "queue update", args[0], func(c *baton.Client, id int64) error {
				return invalidUsage("queue update", c.UpdateMessage(cmd.Context(), id, u))
			})
		},
	}
	cmd.Flags().Var(jsonObjectFlag{&u.Metadata}, "meta", "the JSON object to merge into the message's metadata")
	return cmd
}

// outputKey is the context key of a run's output capture (work --output).
type outputKey struct{}

// headWriter keeps the first max bytes written to it and says whether
// more came.
type headWriter struct {
	mu   sync.Mutex
	buf  []byte
	max  int
	over bool
}

func (h *headWriter) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(p) // all of it taken: io.MultiWriter stops at a short write
	if room := h.max - len(h.buf); len(p) > room {
		h.over = true
		p = p[:max(room, 0)]
	}
	h.buf = append(h.buf, p...)
	return n, nil
}

// capturedStdout is where CMD's standard output is also written when the
// run records it (work --output), nil otherwise.
func capturedStdout(ctx context.Context) io.Writer {
	if h, ok := ctx.Value(outputKey{}).(*headWriter); ok {
		return h
	}
	return nil
}

// recordOutput makes h record CMD's standard output as the output of each
// run that succeeds: as JSON when it is one JSON value, otherwise as a
// JSON string, cut to fit baton.MaxOutput.
func recordOutput(h baton.Handler) baton.Handler {
	return func(ctx context.Context, m *baton.Message) error {
		w := &headWriter{max: baton.MaxOutput}
		err := h(context.WithValue(ctx, outputKey{}, w), m)
		if err != nil || len(w.buf) == 0 {
			return err
		}
		return m.SetOutput(outputValue(w.buf, w.over))
	}
}

// outputValue is what work --output records of a command's standard
// output out (cut when more came): out itself when it is JSON, else a
// string of at most baton.MaxOutput bytes of JSON.
func outputValue(out []byte, cut bool) any {
	trimmed := bytes.TrimSpace(out)
	if !cut && len(trimmed) > 0 && json.Valid(trimmed) {
		return json.RawMessage(trimmed)
	}
	s := strings.ToValidUTF8(string(out), "\uFFFD")
	for {
		b, _ := json.Marshal(s)
		if len(b) <= baton.MaxOutput {
			return s
		}
		// Drop what does not fit, on a character's boundary.
		n := len(s) - (len(b) - baton.MaxOutput)
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:max(n, 0)]
	}
}
