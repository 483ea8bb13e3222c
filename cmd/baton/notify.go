package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton"
)

// argsUsage is cobra.RangeArgs whose error is a usage error (exit 64).
func argsUsage(name string, lo, hi int) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		switch {
		case len(args) < lo:
			return usageErr("%s: %d argument(s) missing (see baton %s --help)", name, lo-len(args), name)
		case hi >= 0 && len(args) > hi:
			return usageErr("%s: too many arguments: %q (see baton %s --help)", name, args[hi:], name)
		}
		return nil
	}
}

// invalidUsage turns a library ErrInvalid (a bad name, payload or option,
// found before anything was done) into a usage error naming the command.
func invalidUsage(cmdName string, err error) error {
	if err != nil && errors.Is(err, baton.ErrInvalid) {
		return usageErr("%s: %s", cmdName, strings.TrimPrefix(err.Error(), "baton: "))
	}
	return err
}

// checkQueue checks a QUEUE argument: a bad name is a usage error of the
// command what.
func checkQueue(what, queue string) error {
	return invalidUsage(what, baton.ValidateQueue(queue))
}

func notifyCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "notify CHANNEL PAYLOAD",
		Short: "Send a notification to every listener of a channel",
		Long: fmt.Sprintf(`Send PAYLOAD (which may be "") to every listener of CHANNEL, in any process
on any host, once baton's own transaction commits.

CHANNEL: 1 to 64 letters, digits, '_', '.', ':' or '-'. PAYLOAD: valid UTF-8,
at most %d bytes. A bad channel or payload exits 64 and sends nothing.

Notifications are not stored: a listener that is not running misses them.
Use a queue (baton queue push) when every message must be processed.`, baton.MaxPayload),
		Example: `  baton notify deploys "v1.4.2 is live"
  baton notify cache.invalidate ""`,
		Args: argsUsage("notify", 2, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			channel, payload := args[0], args[1]
			// Checked before connecting: bad input never touches the database.
			if err := checkNotification(channel, payload); err != nil {
				return err
			}
			return g.withClient(cmd.Context(), func(c *baton.Client) error {
				return invalidUsage("notify", c.Notify(cmd.Context(), channel, payload))
			})
		},
	}
}

// checkNotification checks the channel and payload of baton notify.
func checkNotification(channel, payload string) error {
	if err := baton.ValidateChannel(channel); err != nil {
		return invalidUsage("notify", err)
	}
	return firstUsageErr("notify",
		usageCheck{len(payload) > baton.MaxPayload, fmt.Sprintf("payload is %d bytes, more than %d", len(payload), baton.MaxPayload)},
		usageCheck{!utf8.ValidString(payload), "payload is not valid UTF-8"})
}

func listenCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "listen CHANNEL...",
		Short: "Print the notifications of channels as they arrive",
		Long: `Listen to every CHANNEL and print one line per notification as it arrives,
written at once (no buffering), until baton gets SIGINT or SIGTERM, which make
it exit 0.

Output, one line per notification:
  CHANNEL PAYLOAD                               (default: one space between)
  {"channel":"CHANNEL","payload":"PAYLOAD"}     (--json)

In the default format a payload is printed as sent, so a payload holding a
newline spans two lines; use --json when payloads are arbitrary text.

Only notifications sent after baton started listening are printed; none are
stored for absent listeners.`,
		Example: `  baton listen deploys
  baton listen --json deploys cache.invalidate | jq -r .payload`,
		Args: argsUsage("listen", 1, -1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, ch := range args {
				if err := baton.ValidateChannel(ch); err != nil {
					return invalidUsage("listen", err)
				}
			}
			ctx := cmd.Context()
			return g.withClient(ctx, func(c *baton.Client) error {
				l, err := c.Listen(ctx, args...)
				if err != nil {
					return invalidUsage("listen", err)
				}
				defer l.Close()
				return printNotifications(ctx, l, asJSON)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print one JSON object per line: {"channel":...,"payload":...}`)
	return cmd
}

// notificationLine is a notification's line in baton listen: channel and
// payload, or a JSON object with --json.
func notificationLine(n baton.Notification, asJSON bool) []byte {
	if !asJSON {
		return []byte(n.Channel + " " + n.Payload)
	}
	line, _ := json.Marshal(struct {
		Channel string `json:"channel"`
		Payload string `json:"payload"`
	}{n.Channel, n.Payload})
	return line
}

// printNotifications prints one line per notification as it arrives,
// until ctx ends (SIGINT or SIGTERM).
func printNotifications(ctx context.Context, l *baton.Listener, asJSON bool) error {
	for {
		select {
		case <-ctx.Done():
			return nil // SIGINT or SIGTERM
		case n, ok := <-l.C():
			if !ok {
				return errors.New("listen: the listener stopped")
			}
			// os.Stdout is unbuffered: one write per line, seen at once.
			if _, err := os.Stdout.Write(append(notificationLine(n, asJSON), '\n')); err != nil {
				return fmt.Errorf("listen: write: %w", err)
			}
		}
	}
}
