package baton

import (
	"context"
	"encoding/json"
	"strconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Tracing: a span for each enqueue (kind producer) and each handler run
// (kind consumer). The enqueuer's trace context travels in the message's
// metadata in W3C Trace Context form (traceparent, tracestate), so the
// handler's span is a child of the enqueue's, in the same trace, whichever
// process runs it. The spans come from Options.TracerProvider, by default
// OpenTelemetry's global provider, which does nothing until the program
// sets one.

const tracerName = "github.com/batonhq/baton"

// w3c is the propagator of the metadata: always W3C Trace Context, whatever
// global propagator the program set (or none).
var w3c = propagation.TraceContext{}

// startEnqueue starts the span of an enqueue of n messages to queue and
// returns the metadata that carries its context ("" when it is not
// recording and no trace came in).
func (c *Client) startEnqueue(ctx context.Context, queue string, n int) (context.Context, trace.Span, string) {
	ctx, span := c.tracer.Start(ctx, "baton.enqueue "+queue, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("messaging.system", "baton"), attribute.String("messaging.destination.name", queue),
			attribute.Int("messaging.batch.message_count", n)))
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, span, ""
	}
	carrier := propagation.MapCarrier{}
	w3c.Inject(ctx, carrier)
	b, err := json.Marshal(map[string]string(carrier))
	if err != nil {
		return ctx, span, ""
	}
	return ctx, span, string(b)
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
func (c *Client) startProcess(ctx context.Context, m *Message) (context.Context, trace.Span) {
	if m.meta != "" {
		var carrier map[string]string
		if json.Unmarshal([]byte(m.meta), &carrier) == nil {
			ctx = w3c.Extract(ctx, propagation.MapCarrier(carrier))
		}
	}
	return c.tracer.Start(ctx, "baton.process "+m.Queue, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("messaging.system", "baton"), attribute.String("messaging.destination.name", m.Queue),
			attribute.String("messaging.message.id", strconv.FormatInt(m.ID, 10)), attribute.Int("baton.attempt", m.Attempt)))
}

func defaultTracerProvider() trace.TracerProvider { return otel.GetTracerProvider() }
