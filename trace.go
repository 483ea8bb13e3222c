package baton

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Tracing: a span for each enqueue (kind producer) and each handler run
// (kind consumer). The enqueuer's trace context travels in the message's
// metadata in W3C Trace Context form (traceparent, tracestate), so the
// handler's span is a child of the enqueue's, in the same trace, whichever
// process runs it. The spans come from Options.TracerProvider; without one
// nothing is traced.
//
// The W3C form is written here rather than with otel/propagation, which
// would link net/http (and with it cgo) into the root package.

const tracerName = "github.com/batonhq/baton"

// traceMeta is the metadata's trace context, W3C Trace Context's headers.
type traceMeta struct {
	TraceParent string `json:"traceparent,omitempty"`
	TraceState  string `json:"tracestate,omitempty"`
}

// messageMeta is what a message carries in its meta column (JSON): the
// enqueuer's trace context and the message's handler timeout.
type messageMeta struct {
	traceMeta
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// encodeMeta writes a message's metadata ("" when there is none).
func encodeMeta(m messageMeta) string {
	if m == (messageMeta{}) {
		return ""
	}
	b, err := json.Marshal(m)
	if err != nil {
		return ""
	}
	return string(b)
}

// decodeMeta reads a message's metadata; what cannot be read is ignored.
func decodeMeta(s string) messageMeta {
	var m messageMeta
	if s != "" {
		_ = json.Unmarshal([]byte(s), &m)
	}
	return m
}

// withTrace adds the trace context to a message's metadata.
func withTrace(meta string, tm traceMeta) string {
	m := decodeMeta(meta)
	m.traceMeta = tm
	return encodeMeta(m)
}

// encodeTrace writes a span context as W3C trace context (version 00).
func encodeTrace(sc trace.SpanContext) traceMeta {
	return traceMeta{
		TraceParent: "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + hex.EncodeToString([]byte{byte(sc.TraceFlags())}),
		TraceState:  sc.TraceState().String(),
	}
}

// decodeTrace reads W3C trace context into a remote span context; invalid
// when it is malformed (it is then ignored).
func decodeTrace(m traceMeta) trace.SpanContext {
	parts := strings.Split(m.TraceParent, "-")
	if len(parts) < 4 || len(parts[0]) != 2 || parts[0] == "ff" || (parts[0] == "00" && len(parts) != 4) {
		return trace.SpanContext{}
	}
	tid, err1 := trace.TraceIDFromHex(parts[1])
	sid, err2 := trace.SpanIDFromHex(parts[2])
	flags, err3 := hex.DecodeString(parts[3])
	if err1 != nil || err2 != nil || err3 != nil || len(flags) != 1 {
		return trace.SpanContext{}
	}
	ts, err := trace.ParseTraceState(m.TraceState)
	if err != nil {
		ts = trace.TraceState{}
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid,
		TraceFlags: trace.TraceFlags(flags[0]) & trace.FlagsSampled, TraceState: ts, Remote: true})
}

// spans makes the spans of enqueues and handler runs.
type spans struct {
	tracer trace.Tracer
	on     bool // a TracerProvider other than the default no-op one
}

func newSpans(tp trace.TracerProvider) spans {
	_, off := tp.(noop.TracerProvider)
	return spans{tracer: tp.Tracer(tracerName), on: !off}
}

// startEnqueue starts the span of an enqueue of n messages to queue and
// returns the trace context the messages carry (empty when it is not
// recording and no trace came in).
func (t spans) startEnqueue(ctx context.Context, queue string, n int) (context.Context, trace.Span, traceMeta) {
	ctx, span := t.tracer.Start(ctx, "baton.enqueue "+queue, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("messaging.system", "baton"), attribute.String("messaging.destination.name", queue),
			attribute.Int("messaging.batch.message_count", n)))
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ctx, span, traceMeta{}
	}
	return ctx, span, encodeTrace(sc)
}

// endSpan records err, if any, and ends the span.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// startProcess starts the span of one handler run of m, a child of the
// enqueue's span when the message carries its context.
func (t spans) startProcess(ctx context.Context, m *Message) (context.Context, trace.Span) {
	if sc := decodeTrace(m.meta.traceMeta); sc.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	if !t.on {
		// The no-op tracer records nothing: the same call without the
		// name and attributes, which cost an allocation each on every
		// message.
		return t.tracer.Start(ctx, "")
	}
	return t.tracer.Start(ctx, "baton.process "+m.Queue, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("messaging.system", "baton"), attribute.String("messaging.destination.name", m.Queue),
			attribute.String("messaging.message.id", strconv.FormatInt(m.ID, 10)), attribute.Int("baton.attempt", m.Attempt)))
}

func defaultTracerProvider() trace.TracerProvider { return noop.NewTracerProvider() }
