// Package eventjson turns the events baton's capture triggers write into
// one canonical JSON form, byte for byte the same on every backend.
package eventjson

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Canonical event JSON. The capture triggers write an event in a form of
// their database's JSON functions; Event turns it into the one form
// the Go API and the CLI hand out, byte for byte the same on every backend
// for the same table and row (docs/events.md describes it):
//
//	{"subscription":"s","table":"t","action":"update","pk":{...},"new":{...},"old":{...}}
//
// compact, members in that order, each row an object with its columns in
// the table's order (the primary key's in key order).
//
// What the triggers write, each row (pk, new, old) one of:
//   - null;
//   - an array of columns in the table's order, each [name, value] or
//     [name, value, kind], where kind says how to read a value that JSON
//     cannot carry as it is: "b" binary as hex digits (PostgreSQL's \x
//     prefix allowed), "t" a timestamp as text, "bool" a boolean stored as
//     a number, "j" JSON stored as text;
//   - an object, its keys in the table's order (PostgreSQL's triggers when
//     the table has no binary or timestamp column; triggers installed before
//     kinds existed), whose values need no kind.
//
// Every value is then written canonically: numbers in their shortest exact
// form, strings with only the escapes JSON requires, objects nested in a
// value (JSON columns) with their keys sorted.

// jsonValue is a decoded JSON value that keeps numbers as their text and
// objects' keys in order.
type jsonValue struct {
	kind  byte   // 0 null, 'b' boolean, 'n' number, 's' string, 'a' array, 'o' object
	str   string // a number's text, a string
	truth bool
	keys  []string    // an object's keys
	items []jsonValue // an array's items, an object's values
}

// decodeJSON reads one JSON value (RFC 8259); ok is false for anything
// else. Strings come out as valid UTF-8: an invalid byte, or an escaped
// lone surrogate, becomes U+FFFD, as encoding/json does.
func decodeJSON(data []byte) (v jsonValue, ok bool) {
	d := jsonDecoder{s: data}
	if v, ok = d.value(0); !ok {
		return v, false
	}
	d.space()
	return v, d.p == len(d.s)
}

type jsonDecoder struct {
	s []byte
	p int
}

func (d *jsonDecoder) space() {
	for d.p < len(d.s) && (d.s[d.p] == ' ' || d.s[d.p] == '\t' || d.s[d.p] == '\n' || d.s[d.p] == '\r') {
		d.p++
	}
}

// next skips white space and consumes c if it comes next.
func (d *jsonDecoder) next(c byte) bool {
	d.space()
	if d.p < len(d.s) && d.s[d.p] == c {
		d.p++
		return true
	}
	return false
}

func (d *jsonDecoder) value(depth int) (jsonValue, bool) {
	d.space()
	if d.p >= len(d.s) || depth > 10000 {
		return jsonValue{}, false
	}
	switch d.s[d.p] {
	case '{', '[':
		return d.container(depth)
	case '"':
		str, ok := d.string()
		return jsonValue{kind: 's', str: str}, ok
	case 't':
		return jsonValue{kind: 'b', truth: true}, d.literal("true")
	case 'f':
		return jsonValue{kind: 'b'}, d.literal("false")
	case 'n':
		return jsonValue{}, d.literal("null")
	}
	num, ok := d.number()
	return jsonValue{kind: 'n', str: num}, ok
}

// item reads an element of v, an array, or a member of v, an object.
func (d *jsonDecoder) item(v *jsonValue, depth int) bool {
	if v.kind == 'o' {
		d.space()
		k, ok := d.string()
		if !ok || !d.next(':') {
			return false
		}
		v.keys = append(v.keys, k)
	}
	item, ok := d.value(depth + 1)
	if ok {
		v.items = append(v.items, item)
	}
	return ok
}

// container reads an object or an array, whose opening bracket is at d.p.
func (d *jsonDecoder) container(depth int) (jsonValue, bool) {
	v := jsonValue{kind: 'a'}
	end := byte(']')
	if d.s[d.p] == '{' {
		v.kind, end = 'o', '}'
	}
	d.p++
	if d.next(end) {
		return v, true
	}
	for {
		if !d.item(&v, depth) {
			return v, false
		}
		if d.next(end) {
			return v, true
		}
		if !d.next(',') {
			return v, false
		}
	}
}

func (d *jsonDecoder) literal(lit string) bool {
	if !bytes.HasPrefix(d.s[d.p:], []byte(lit)) {
		return false
	}
	d.p += len(lit)
	return true
}

func (d *jsonDecoder) digits() bool {
	start := d.p
	for d.p < len(d.s) && d.s[d.p] >= '0' && d.s[d.p] <= '9' {
		d.p++
	}
	return d.p > start
}

func (d *jsonDecoder) number() (string, bool) {
	start := d.p
	d.skip('-')
	switch {
	case d.skip('0'):
	case !d.digits():
		return "", false
	}
	if d.skip('.') && !d.digits() {
		return "", false
	}
	if (d.skip('e') || d.skip('E')) && !d.exponent() {
		return "", false
	}
	return string(d.s[start:d.p]), true
}

// exponent reads an exponent's optional sign and its digits.
func (d *jsonDecoder) exponent() bool {
	_ = d.skip('+') || d.skip('-')
	return d.digits()
}

// skip reads the byte c if it comes next.
func (d *jsonDecoder) skip(c byte) bool {
	if d.p < len(d.s) && d.s[d.p] == c {
		d.p++
		return true
	}
	return false
}

func (d *jsonDecoder) string() (string, bool) {
	if d.p >= len(d.s) || d.s[d.p] != '"' {
		return "", false
	}
	d.p++
	start := d.p
	// Most strings have nothing to decode.
	d.plain()
	if d.skip('"') {
		return string(d.s[start : d.p-1]), true
	}
	return d.escaped(append([]byte(nil), d.s[start:d.p]...))
}

// escaped reads the rest of a string from the first byte that stands
// for something else (an escape, non-ASCII), after b, what came before.
func (d *jsonDecoder) escaped(b []byte) (string, bool) {
	for d.p < len(d.s) {
		c := d.s[d.p]
		switch {
		case c == '"':
			d.p++
			return string(b), true
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(d.s[d.p:])
			b = utf8.AppendRune(b, r) // U+FFFD for an invalid byte
			d.p += size
		case c != '\\':
			b = append(b, c)
			d.p++
		default:
			var ok bool
			if b, ok = d.escape(b); !ok {
				return "", false
			}
		}
	}
	return "", false
}

// plain skips bytes that stand for themselves in a string: printable
// ASCII other than the quote and the backslash.
func (d *jsonDecoder) plain() {
	for d.p < len(d.s) && d.s[d.p] != '"' && d.s[d.p] != '\\' && d.s[d.p] >= 0x20 && d.s[d.p] < utf8.RuneSelf {
		d.p++
	}
}

// jsonEscapes maps the one-letter escapes to what they stand for.
var jsonEscapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// escape decodes the escape at d.p (a backslash) and appends it to b.
func (d *jsonDecoder) escape(b []byte) ([]byte, bool) {
	if d.p+1 >= len(d.s) {
		return b, false
	}
	e := d.s[d.p+1]
	d.p += 2
	if e == 'u' {
		r, ok := d.unicodeEscape()
		return utf8.AppendRune(b, r), ok
	}
	if c := jsonEscapes[e]; c != 0 {
		return append(b, c), true
	}
	return b, false
}

// unicodeEscape reads the four hex digits after \u and, for the first half
// of a surrogate pair, the pair's second escape.
func (d *jsonDecoder) unicodeEscape() (rune, bool) {
	r, ok := d.hex4()
	if !ok || !utf16.IsSurrogate(r) {
		return r, ok
	}
	// A pair makes one character; a lone half is U+FFFD and the escape
	// after it stands on its own.
	save := d.p
	pair := unicode.ReplacementChar
	if d.p+1 < len(d.s) && d.s[d.p] == '\\' && d.s[d.p+1] == 'u' {
		d.p += 2
		if r2, ok := d.hex4(); ok {
			pair = utf16.DecodeRune(r, r2)
		}
	}
	if pair == unicode.ReplacementChar {
		d.p = save
	}
	return pair, true
}

func (d *jsonDecoder) hex4() (rune, bool) {
	if d.p+4 > len(d.s) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(d.s[d.p:d.p+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	d.p += 4
	return rune(v), true
}

// Event returns an event message's payload in canonical form and
// its primary key as canonical JSON ("" when the event has none); ok is
// false, and the payload comes back unchanged, when it is not an event.
// Canonical payloads come back unchanged.
func Event(payload []byte) (out []byte, pk string, ok bool) {
	v, ok := decodeJSON(payload)
	if !ok || v.kind != 'o' {
		return payload, "", false
	}
	sub, table, action := v.field("subscription"), v.field("table"), v.field("action")
	rows := [3]jsonValue{v.fieldValue("pk"), v.fieldValue("new"), v.fieldValue("old")}
	if !sub.isString() || !table.isString() || !action.isString() {
		return payload, "", false
	}
	b := make([]byte, 0, len(payload))
	b = append(b, `{"subscription":`...)
	b = appendJSONString(b, sub.str)
	b = append(b, `,"table":`...)
	b = appendJSONString(b, table.str)
	b = append(b, `,"action":`...)
	b = appendJSONString(b, action.str)
	if b, pk, ok = appendRows(b, rows); !ok {
		return payload, "", false
	}
	return append(b, '}'), pk, true
}

// appendRows writes an event's pk, new and old rows as its members, and
// returns the pk as canonical JSON ("" when it is null); ok is false when
// one is no row.
func appendRows(b []byte, rows [3]jsonValue) (_ []byte, pk string, ok bool) {
	for i, name := range []string{`,"pk":`, `,"new":`, `,"old":`} {
		b = append(b, name...)
		start := len(b)
		if b, ok = appendRow(b, rows[i]); !ok {
			return b, "", false
		}
		if i == 0 && rows[i].kind != 0 {
			pk = string(b[start:])
		}
	}
	return b, pk, true
}

// field returns an object's member (the last one of that name, as
// encoding/json reads duplicates), nil when it has none.
func (v *jsonValue) field(name string) *jsonValue {
	for i := len(v.keys) - 1; i >= 0; i-- {
		if v.keys[i] == name {
			return &v.items[i]
		}
	}
	return nil
}

// fieldValue is field's value, JSON null when absent.
func (v *jsonValue) fieldValue(name string) jsonValue {
	if f := v.field(name); f != nil {
		return *f
	}
	return jsonValue{}
}

func (v *jsonValue) isString() bool { return v != nil && v.kind == 's' }

// appendRow writes a row (see above) as an object in canonical form; ok is
// false when it is no row.
func appendRow(b []byte, row jsonValue) ([]byte, bool) {
	switch row.kind {
	case 0:
		return append(b, "null"...), true
	case 'o':
		b = append(b, '{')
		for i, k := range row.keys {
			b = appendCanonical(appendKey(b, i, k), row.items[i])
		}
		return append(b, '}'), true
	case 'a':
		return appendColumns(b, row.items)
	}
	return b, false
}

// appendColumns writes a row given as its columns, each [name, value] or
// [name, value, kind], as an object; ok is false when a column is not one.
func appendColumns(b []byte, cols []jsonValue) ([]byte, bool) {
	b = append(b, '{')
	for i, col := range cols {
		if col.kind != 'a' || len(col.items) < 2 || len(col.items) > 3 || col.items[0].kind != 's' {
			return b, false
		}
		b = appendKey(b, i, col.items[0].str)
		kind := ""
		if len(col.items) == 3 {
			kind = col.items[2].str
		}
		b = appendColumn(b, col.items[1], kind)
	}
	return append(b, '}'), true
}

// appendColumn writes a column's value, read as its kind says; a value
// that does not read as its kind is written as it is.
func appendColumn(b []byte, v jsonValue, kind string) []byte {
	switch {
	case v.kind == 's':
		if out, ok := appendStringColumn(b, v.str, kind); ok {
			return out
		}
	case kind == "bool" && v.kind == 'n':
		return strconv.AppendBool(b, Number(v.str) != "0")
	}
	return appendCanonical(b, v)
}

// appendStringColumn writes a column's string value read as its kind
// says (bytes in hex, a timestamp, JSON text); ok is false when the kind
// is none of these or the value does not read as it.
func appendStringColumn(b []byte, s, kind string) ([]byte, bool) {
	switch kind {
	case "b":
		if raw, err := hex.DecodeString(strings.TrimPrefix(s, `\x`)); err == nil {
			return appendJSONString(b, base64.StdEncoding.EncodeToString(raw)), true
		}
	case "t":
		if ts, ok := Timestamp(s); ok {
			return appendJSONString(b, ts), true
		}
	case "j":
		if j, ok := decodeJSON([]byte(s)); ok {
			return appendCanonical(b, j), true
		}
	}
	return b, false
}

// appendCanonical writes a value canonically: objects with their keys
// sorted (bytewise; a key that appears twice keeps its values' order).
func appendCanonical(b []byte, v jsonValue) []byte {
	switch v.kind {
	case 0:
		return append(b, "null"...)
	case 'b':
		return strconv.AppendBool(b, v.truth)
	case 'n':
		return append(b, Number(v.str)...)
	case 's':
		return appendJSONString(b, v.str)
	case 'a':
		b = append(b, '[')
		for i, item := range v.items {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanonical(b, item)
		}
		return append(b, ']')
	}
	return appendSorted(b, v)
}

// appendSorted writes an object canonically, its keys sorted.
func appendSorted(b []byte, v jsonValue) []byte {
	order := make([]int, len(v.keys))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return v.keys[order[i]] < v.keys[order[j]] })
	b = append(b, '{')
	for n, i := range order {
		b = appendCanonical(appendKey(b, n, v.keys[i]), v.items[i])
	}
	return append(b, '}')
}

// appendKey writes an object member's key and its colon, after a comma
// unless it is the first member (n 0).
func appendKey(b []byte, n int, key string) []byte {
	if n > 0 {
		b = append(b, ',')
	}
	b = appendJSONString(b, key)
	return append(b, ':')
}

// appendJSONString writes s as a JSON string with only the escapes JSON
// requires: the quote, the backslash and the control characters U+0000 to
// U+001F (\b, \f, \n, \r, \t, else \u00xx). Everything else, non-ASCII
// included, is written as UTF-8; invalid UTF-8 becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\b':
			b = append(b, '\\', 'b')
		case r == '\f':
			b = append(b, '\\', 'f')
		case r == '\n':
			b = append(b, '\\', 'n')
		case r == '\r':
			b = append(b, '\\', 'r')
		case r == '\t':
			b = append(b, '\\', 't')
		case r < 0x20:
			b = append(b, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xf])
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}

// Number writes a JSON number in its shortest exact form: no
// leading or trailing zeros, no sign on zero, plain when 1e-6 <= |x| <
// 1e21 and in exponent form otherwise (1e+21, 1.5e-7), as JavaScript and
// Go's encoding/json write floating-point numbers. The value is the number
// as written, digit for digit: 12.50 becomes 12.5, 100.00 becomes 100,
// 9007199254740993 stays, 1.0e+20 becomes 100000000000000000000.
func Number(num string) string {
	neg, digits, exp, ok := decimal(num)
	switch {
	case !ok:
		return num // beyond anything a database writes
	case digits == "":
		return "0"
	}
	return formatNumber(neg, digits, len(digits)+exp)
}

// decimal reads a JSON number as its sign, its significant digits
// (without leading or trailing zeros; "" for zero) and the power of ten
// they are multiplied by; ok is false for an exponent beyond 10^8.
func decimal(num string) (neg bool, digits string, exp int, ok bool) {
	s := num
	neg = strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil || e > 1e8 || e < -1e8 {
			return false, "", 0, false
		}
		exp, s = e, s[:i]
	}
	digits = s
	if i := strings.IndexByte(s, '.'); i >= 0 {
		digits = s[:i] + s[i+1:]
		exp -= len(s) - i - 1
	}
	digits = strings.TrimLeft(digits, "0")
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	return neg, trimmed, exp, true
}

// formatNumber writes the number 0.digits × 10^point, negative when neg,
// as Number says.
func formatNumber(neg bool, digits string, point int) string {
	var out strings.Builder
	if neg {
		out.WriteByte('-')
	}
	switch {
	case point > 21 || point < -5:
		out.WriteString(digits[:1])
		if len(digits) > 1 {
			out.WriteByte('.')
			out.WriteString(digits[1:])
		}
		out.WriteByte('e')
		if point-1 >= 0 {
			out.WriteByte('+')
		}
		out.WriteString(strconv.Itoa(point - 1))
	case point <= 0:
		out.WriteString("0.")
		out.WriteString(strings.Repeat("0", -point))
		out.WriteString(digits)
	case point >= len(digits):
		out.WriteString(digits)
		out.WriteString(strings.Repeat("0", point-len(digits)))
	default:
		out.WriteString(digits[:point])
		out.WriteByte('.')
		out.WriteString(digits[point:])
	}
	return out.String()
}

// Timestamp reads a timestamp as the databases write it,
// 2006-01-02[ T]15:04[:05[.999999999]], optionally followed (after a space
// or not) by Z or a UTC offset (-07, -0700, -07:00, -07:00:00) and then,
// as Go's Time.String writes, a zone name and a monotonic clock reading;
// a date alone is midnight. It returns the instant in UTC as
// 2006-01-02T15:04:05.000000Z, the fraction cut to microseconds; a time
// without an offset is taken as UTC. ok is false for anything else.
func Timestamp(s string) (string, bool) {
	sc := &tsScanner{s: s}
	var f tsFields
	if !sc.date(&f) || !sc.clock(&f) || !sc.offset(&f) || sc.p != len(s) || !f.valid() {
		return "", false
	}
	t := time.Date(f.year, time.Month(f.month), f.day, f.hour, f.minute, f.sec, f.micro*1000, time.UTC)
	if t.Day() != f.day {
		return "", false // 2024-02-30
	}
	t = t.Add(-time.Duration(f.offset) * time.Second)
	if t.Year() < 1 || t.Year() > 9999 {
		return "", false
	}
	return t.Format("2006-01-02T15:04:05.000000") + "Z", true
}

// tsFields are the parts of a timestamp Timestamp reads; offset
// is in seconds east of UTC.
type tsFields struct {
	year, month, day, hour, minute, sec, micro, offset int
}

func (f *tsFields) valid() bool {
	return f.month >= 1 && f.month <= 12 && f.day >= 1 && f.hour <= 23 && f.minute <= 59 && f.sec <= 59
}

// tsScanner reads a timestamp left to right; p is the next byte.
type tsScanner struct {
	s string
	p int
}

// num reads exactly n decimal digits.
func (sc *tsScanner) num(n int) (int, bool) {
	if sc.p+n > len(sc.s) {
		return 0, false
	}
	v := 0
	for _, c := range []byte(sc.s[sc.p : sc.p+n]) {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	sc.p += n
	return v, true
}

// lit reads the byte c if it comes next.
func (sc *tsScanner) lit(c byte) bool {
	if sc.p < len(sc.s) && sc.s[sc.p] == c {
		sc.p++
		return true
	}
	return false
}

// peek returns the next byte (0 at the end).
func (sc *tsScanner) peek() byte {
	if sc.p < len(sc.s) {
		return sc.s[sc.p]
	}
	return 0
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// date reads 2006-01-02.
func (sc *tsScanner) date(f *tsFields) bool {
	var ok [5]bool
	f.year, ok[0] = sc.num(4)
	ok[1] = sc.lit('-')
	f.month, ok[2] = sc.num(2)
	ok[3] = sc.lit('-')
	f.day, ok[4] = sc.num(2)
	return ok == [5]bool{true, true, true, true, true}
}

// clock reads an optional [ Tt]15:04[:05[.999999999]].
func (sc *tsScanner) clock(f *tsFields) bool {
	if c := sc.peek(); c != ' ' && c != 'T' && c != 't' {
		return true
	}
	sc.p++
	var okh, okc, okm bool
	f.hour, okh = sc.num(2)
	okc = sc.lit(':')
	f.minute, okm = sc.num(2)
	if !(okh && okc && okm) {
		return false
	}
	if !sc.lit(':') {
		return true
	}
	return sc.seconds(f)
}

// seconds scans the seconds of a clock and their fraction, if any.
func (sc *tsScanner) seconds(f *tsFields) bool {
	var ok bool
	if f.sec, ok = sc.num(2); !ok {
		return false
	}
	if !sc.lit('.') {
		return true
	}
	return sc.fraction(f)
}

// fraction scans the digits of a fraction of a second (at least one),
// cut to microseconds.
func (sc *tsScanner) fraction(f *tsFields) bool {
	start := sc.p
	for isDigit(sc.peek()) {
		sc.p++
	}
	frac := sc.s[start:sc.p]
	if frac == "" {
		return false
	}
	f.micro, _ = strconv.Atoi((frac + "000000")[:6])
	return true
}

// offset reads an optional zone: Z, or a signed offset followed by what
// Go's Time.String may append.
func (sc *tsScanner) offset(f *tsFields) bool {
	if sc.peek() == ' ' && sc.p+1 < len(sc.s) && strings.IndexByte("Zz+-", sc.s[sc.p+1]) >= 0 {
		sc.p++
	}
	switch sc.peek() {
	case 'Z', 'z':
		sc.p++
	case '+', '-':
		return sc.signedOffset(f) && sc.goSuffix()
	}
	return true
}

// signedOffset reads -07, -0700, -07:00 or -07:00:00.
func (sc *tsScanner) signedOffset(f *tsFields) bool {
	sign := 1
	if sc.s[sc.p] == '-' {
		sign = -1
	}
	sc.p++
	oh, ok := sc.num(2)
	if !ok {
		return false
	}
	om, osec, ok := sc.offsetRest()
	if !ok || oh > 23 || om > 59 || osec > 59 {
		return false
	}
	f.offset = sign * (oh*3600 + om*60 + osec)
	return true
}

// offsetRest scans what follows an offset's hours: minutes (after a colon
// or not), then seconds after a colon if the minutes had one.
func (sc *tsScanner) offsetRest() (om, osec int, ok bool) {
	colon := sc.lit(':')
	switch {
	case isDigit(sc.peek()):
		if om, ok = sc.num(2); !ok {
			return 0, 0, false
		}
		if colon && sc.lit(':') {
			if osec, ok = sc.num(2); !ok {
				return 0, 0, false
			}
		}
	case colon:
		return 0, 0, false
	}
	return om, osec, true
}

// goSuffix reads what Go's Time.String writes after an offset: " MST" and
// " m=+0.000000001", each optional.
func (sc *tsScanner) goSuffix() bool {
	rest := sc.s[sc.p:]
	if strings.HasPrefix(rest, " ") && !strings.HasPrefix(rest, " m=") {
		name := rest[1:]
		if i := strings.IndexByte(name, ' '); i >= 0 {
			name = name[:i]
		}
		if name == "" || strings.Trim(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+-_") != "" {
			return false
		}
		sc.p += 1 + len(name)
		rest = sc.s[sc.p:]
	}
	if strings.HasPrefix(rest, " m=") && strings.Trim(rest[3:], "0123456789.+-") == "" {
		sc.p = len(sc.s)
	}
	return true
}
