package eventjson_test

import (
	"encoding/json"
	"testing"

	"github.com/batonhq/baton/internal/eventjson"
)

func TestCanonicalNumber(t *testing.T) {
	for in, want := range map[string]string{
		"0": "0", "-0": "0", "0.000": "0", "-0.0e5": "0", "7": "7", "-7": "-7", "100": "100",
		"12.5000": "12.5", "100.0000": "100", "-0.0001": "-0.0001", "0.1": "0.1",
		"9007199254740993": "9007199254740993", "18446744073709551615": "18446744073709551615",
		"0.30000000000000004": "0.30000000000000004",
		"1e20":                "100000000000000000000", "1.0e+20": "100000000000000000000", "1e+21": "1e+21", "1E21": "1e+21",
		"123456789012345678901234": "1.23456789012345678901234e+23",
		"1.2345678901234568e+17":   "123456789012345680", "1.2345678901234568e17": "123456789012345680",
		"0.000001": "0.000001", "1e-6": "0.000001", "0.00000015": "1.5e-7", "1.5e-07": "1.5e-7", "-1.5e-7": "-1.5e-7",
		"1e300": "1e+300", "1.0e+300": "1e+300", "9.0e+999": "9e+999", "25e-1": "2.5", "0.5E1": "5",
		"1e999999999999": "1e999999999999",
	} {
		if got := eventjson.Number(in); got != want {
			t.Errorf("CanonicalNumber(%s) = %s, want %s", in, got, want)
		}
		if again := eventjson.Number(want); again != want {
			t.Errorf("CanonicalNumber(%s) = %s: not a fixed point", want, again)
		}
	}
}

func TestCanonicalTimestamp(t *testing.T) {
	for in, want := range map[string]string{
		"2024-01-02T03:04:05.123456":                     "2024-01-02T03:04:05.123456Z", // PostgreSQL timestamp
		"2024-01-02T01:04:05.5+00:00":                    "2024-01-02T01:04:05.500000Z", // timestamptz
		"2024-01-02 03:04:05.123456":                     "2024-01-02T03:04:05.123456Z", // MariaDB
		"2024-01-02 03:04:05":                            "2024-01-02T03:04:05.000000Z",
		"2024-01-02 03:04":                               "2024-01-02T03:04:00.000000Z",
		"2024-01-02":                                     "2024-01-02T00:00:00.000000Z",
		"2024-01-02T03:04:05Z":                           "2024-01-02T03:04:05.000000Z",
		"2024-01-02t03:04:05.1z":                         "2024-01-02T03:04:05.100000Z",
		"2024-01-02T03:04:05.5+02:00":                    "2024-01-02T01:04:05.500000Z",
		"2024-01-02 03:04:05-0130":                       "2024-01-02T04:34:05.000000Z",
		"2024-01-02 03:04:05+02":                         "2024-01-02T01:04:05.000000Z",
		"2024-01-02 00:04:05+05:53:28":                   "2024-01-01T18:10:37.000000Z",
		"2024-01-02 03:04:05.123456789-07:00":            "2024-01-02T10:04:05.123456Z", // mattn/go-sqlite3
		"2024-01-02 03:04:05.123456789 -0700 MST":        "2024-01-02T10:04:05.123456Z", // Go's Time.String
		"2024-01-02 03:04:05.5 +0000 UTC m=+0.000000001": "2024-01-02T03:04:05.500000Z",
		"2024-12-31 23:30:00-01:00":                      "2025-01-01T00:30:00.000000Z",
		"2024-02-29 12:00:00":                            "2024-02-29T12:00:00.000000Z",
	} {
		got, ok := eventjson.Timestamp(in)
		if !ok || got != want {
			t.Errorf("CanonicalTimestamp(%q) = %q, %v; want %q", in, got, ok, want)
		}
		if again, ok := eventjson.Timestamp(want); !ok || again != want {
			t.Errorf("CanonicalTimestamp(%q) = %q: not a fixed point", want, again)
		}
	}
	for _, in := range []string{
		"", "infinity", "-infinity", "2024-1-02", "2023-02-29 00:00:00", "2024-13-01", "2024-01-02 24:00:00",
		"2024-01-02 03:04:05.", "2024-01-02 03:04:05 BC", "0044-03-15 00:00:00 BC", "2024-01-02 03:04:05+2",
		"2024-01-02 03:04:05+02:", "10000-01-01 00:00:00", "0000-01-01 00:00:00", "1704157445", "2024-01-02 03:04:05 x",
	} {
		if got, ok := eventjson.Timestamp(in); ok {
			t.Errorf("CanonicalTimestamp(%q) = %q, want no timestamp", in, got)
		}
	}
}

// TestCanonicalEvent: each backend's way of writing a row gives the same
// bytes; events written before the canonical form are put in it as far as
// their values allow; what is not an event is left alone.
func TestCanonicalEvent(t *testing.T) {
	const want = `{"subscription":"s","table":"t","action":"update","pk":{"id":1},` +
		`"new":{"id":1,"n":12.5,"ok":true,"at":"2024-01-02T01:04:05.500000Z","bin":"AP8Q","doc":{"a":"\u001f\"é","b":[1e+21]},"s":"x\ty"},` +
		`"old":null}`
	for name, in := range map[string]string{
		"sqlite": `{"subscription":"s","table":"t","action":"update","pk":[["id",1]],` +
			`"new":[["id",1],["n",12.5],["ok",1,"bool"],["at","2024-01-02 03:04:05.5+02:00","t"],["bin","00FF10","b"],["doc","{\"b\":[1e21],\"a\":\"\\u001F\\\"\\u00e9\"}","j"],["s","x\ty"]],"old":null}`,
		"mysql": `{"subscription": "s", "table": "t", "action": "update", "pk": [["id", 1]], ` +
			`"new": [["id", 1], ["n", 12.5000], ["ok", 1, "bool"], ["at", "2024-01-02 01:04:05.500000", "t"], ["bin", "00FF10", "b"], ["doc", {"b": [1E+21], "a": "\u001f\"é"}], ["s", "x\ty"]], "old": null}`,
		"postgres": `{"subscription" : "s", "table" : "t", "action" : "update", "pk" : {"id":1}, ` +
			`"new" : [["id", 1], ["n", 12.50], ["ok", true], ["at", "2024-01-02T01:04:05.5+00:00", "t"], ["bin", "\\x00ff10", "b"], ["doc", {"a": "\u001f\"é", "b": [1000000000000000000000]}], ["s", "x\u0009y"]], "old" : null}`,
		"canonical": want,
		"members in any order": `{"old":null,"new":{"id":1,"n":12.5,"ok":true,"at":"2024-01-02T01:04:05.500000Z","bin":"AP8Q","doc":{"b":[1e+21],"a":"\u001f\"é"},"s":"x\ty"},` +
			`"pk":{"id":1},"action":"update","table":"t","subscription":"s","extra":1}`,
	} {
		got, pk, ok := eventjson.Event([]byte(in))
		if !ok || string(got) != want || pk != `{"id":1}` {
			t.Errorf("%s:\n got %s (pk %s, %v)\nwant %s", name, got, pk, ok, want)
		}
	}

	// Before the canonical form (PostgreSQL's jsonb, MariaDB's JSON_OBJECT):
	// key order and values as written, but the form is canonical.
	got, pk, ok := eventjson.Event([]byte(`{"pk": {"id": 1}, "new": {"id": 1, "name": "Go", "price": 1.50}, "old": null, "table": "x.t", "action": "insert", "subscription": "s"}`))
	if w := `{"subscription":"s","table":"x.t","action":"insert","pk":{"id":1},"new":{"id":1,"name":"Go","price":1.5},"old":null}`; !ok || string(got) != w || pk != `{"id":1}` {
		t.Errorf("old event: %s (pk %s, %v)", got, pk, ok)
	}

	// A value that does not read as its kind is kept; invalid UTF-8
	// becomes U+FFFD.
	got, _, ok = eventjson.Event([]byte(`{"subscription":"s","table":"t","action":"insert","pk":null,"new":[["a","zz","b"],["b","soon","t"],["c","yes","bool"],["d","{","j"],["e",3,"t"],["f","` + "\xff" + `"]],"old":null}`))
	if w := `{"subscription":"s","table":"t","action":"insert","pk":null,"new":{"a":"zz","b":"soon","c":"yes","d":"{","e":3,"f":"` + "\uFFFD" + `"},"old":null}`; !ok || string(got) != w {
		t.Errorf("values not of their kind: %s, %v", got, ok)
	}

	for _, in := range []string{``, `x`, `[]`, `{}`, `{"subscription":"s","table":"t"}`, `{"subscription":1,"table":"t","action":"insert"}`,
		`{"subscription":"s","table":"t","action":"insert","new":[["a"]]}`, `{"subscription":"s","table":"t","action":"insert","new":5}`,
		`{"subscription":"s","table":"t","action":"insert"} {}`, "hello"} {
		if got, _, ok := eventjson.Event([]byte(in)); ok || string(got) != in {
			t.Errorf("not an event %q: got %q, %v", in, got, ok)
		}
	}
}

// FuzzCanonicalEvent: only valid JSON is read, its strings as
// encoding/json reads them; the canonical form is valid JSON and a fixed
// point.
func FuzzCanonicalEvent(f *testing.F) {
	for _, s := range []string{
		`{"subscription":"s","table":"t","action":"insert","pk":[["id",1]],"new":[["id",1],["b","00ff","b"],["t","2024-01-02 03:04:05+02:00","t"],["x",1,"bool"],["j","{\"b\":1,\"a\":[2.50]}","j"]],"old":null}`,
		`{"subscription" : "s", "table" : "t", "action" : "delete", "pk" : {"id": 1}, "new" : null, "old" : {"id": 1, "v": 1.0e+20, "s": "\u00e9\n"}}`,
		`{"subscription":"s","table":"t","action":"update","pk":{"a":{"b":{"b":1,"a":2}}},"new":[["a",[1,{"z":1,"y":-0.0}]]],"old":[["n",1e-7]]}`,
		`{"subscription":"s","table":"t","action":"insert","pk":null,"new":{"s":"\ud83d\ude00 \ud83d \ude00 \ud83d\u0041 \/"},"old":null}`,
		`{"subscription":"\u00e9\ud83d\ude00\\\"\t","table":"t\ud800\ud800\udc00` + "\xff\xe2\x9c" + `","action":"\u0000"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, pk, ok := eventjson.Event(in)
		if !ok {
			if string(out) != string(in) {
				t.Fatalf("not an event, but changed: %q -> %q", in, out)
			}
			return
		}
		if !json.Valid(in) {
			t.Fatalf("invalid JSON %q taken for an event", in)
		}
		if !json.Valid(out) || (pk != "" && !json.Valid([]byte(pk))) {
			t.Fatalf("%q -> invalid JSON %q (pk %q)", in, out, pk)
		}
		// Strings read as encoding/json reads them.
		var before, after map[string]any
		_ = json.Unmarshal(in, &before)
		_ = json.Unmarshal(out, &after)
		for _, k := range []string{"subscription", "table", "action"} {
			if before[k] != after[k] {
				t.Fatalf("%s: %q read as %q", k, before[k], after[k])
			}
		}
		again, pk2, ok := eventjson.Event(out)
		if !ok || string(again) != string(out) || pk2 != pk {
			t.Fatalf("not a fixed point: %q -> %q -> %q", in, out, again)
		}
	})
}
