// Package tracing makes the spans of enqueues (kind producer) and handler
// runs (kind consumer). The enqueuer's trace context travels in the
// message's metadata in W3C Trace Context form (traceparent, tracestate),
// so the handler's span is a child of the enqueue's, in the same trace,
// whichever process runs it. The spans come from the client's
// TracerProvider; with the default no-op one nothing is traced.
//
// The W3C form is written here rather than with otel/propagation, which
// would link net/http (and with it cgo) into the root package.
package tracing

import (
	"context"
	"encoding/hex"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Name is the tracer's name.
const Name = "github.com/batonhq/baton"

// Context is a message's trace context, W3C Trace Context's headers.
type Context struct {
	TraceParent string `json:"traceparent,omitempty"`
	TraceState  string `json:"tracestate,omitempty"`
}

// Encode writes a span context as W3C trace context (version 00).
func Encode(sc trace.SpanContext) Context {
	return Context{
		TraceParent: "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + hex.EncodeToString([]byte{byte(sc.TraceFlags())}),
		TraceState:  sc.TraceState().String(),
	}
}

// Decode reads W3C trace context into a remote span context; invalid
// when it is malformed (it is then ignored).
func Decode(m Context) trace.SpanContext {
	cfg, ok := parseTraceParent(m.TraceParent)
	if !ok {
		return trace.SpanContext{}
	}
	ts, err := trace.ParseTraceState(m.TraceState)
	if err != nil {
		ts = trace.TraceState{}
	}
	cfg.TraceState, cfg.Remote = ts, true
	return trace.NewSpanContext(cfg)
}

// parseTraceParent reads a W3C traceparent header: the trace and span
// ids and the sampled flag; false when it is malformed.
func parseTraceParent(tp string) (trace.SpanContextConfig, bool) {
	parts := strings.Split(tp, "-")
	if len(parts) < 4 || len(parts[0]) != 2 || parts[0] == "ff" || (parts[0] == "00" && len(parts) != 4) {
		return trace.SpanContextConfig{}, false
	}
	tid, err1 := trace.TraceIDFromHex(parts[1])
	sid, err2 := trace.SpanIDFromHex(parts[2])
	flags, err3 := hex.DecodeString(parts[3])
	if err1 != nil || err2 != nil || err3 != nil || len(flags) != 1 {
		return trace.SpanContextConfig{}, false
	}
	return trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(flags[0]) & trace.FlagsSampled}, true
}

// DefaultProvider is the no-op provider: nothing is traced.
func DefaultProvider() trace.TracerProvider { return noop.NewTracerProvider() }

// Spans makes the spans of enqueues and handler runs.
type Spans struct {
	tracer trace.Tracer
	on     bool // a TracerProvider other than the default no-op one
}

// New makes the spans of one client.
func New(tp trace.TracerProvider) Spans {
	_, off := tp.(noop.TracerProvider)
	return Spans{tracer: tp.Tracer(Name), on: !off}
}

// StartEnqueue starts the span of an enqueue of n messages to queue and
// returns the trace context the messages carry (empty when it is not
// recording and no trace came in).
func (t Spans) StartEnqueue(ctx context.Context, queue string, n int) (context.Context, trace.Span, Context) {
	ctx, span := t.tracer.Start(ctx, "baton.enqueue "+queue, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("messaging.system", "baton"), attribute.String("messaging.destination.name", queue),
			attribute.Int("messaging.batch.message_count", n)))
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ctx, span, Context{}
	}
	return ctx, span, Encode(sc)
}

// StartProcess starts the span of one handler run (attempt) of message
// id of queue, a child of the enqueue's span when the message carries its
// context tc.
func (t Spans) StartProcess(ctx context.Context, tc Context, queue string, id int64, attempt int) (context.Context, trace.Span) {
	if sc := Decode(tc); sc.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	if !t.on {
		// The no-op tracer records nothing: the same call without the
		// name and attributes, which cost an allocation each on every
		// message.
		return t.tracer.Start(ctx, "")
	}
	return t.tracer.Start(ctx, "baton.process "+queue, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("messaging.system", "baton"), attribute.String("messaging.destination.name", queue),
			attribute.String("messaging.message.id", strconv.FormatInt(id, 10)), attribute.Int("baton.attempt", attempt)))
}

// End records err, if any, and ends the span.
func End(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
