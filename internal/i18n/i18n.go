// Package i18n is the language a reader is spoken to in: English or
// Japanese, chosen from a browser's Accept-Language or a terminal's
// LC_ALL, LC_MESSAGES and LANG, and the message catalogue of each.
//
// A message's key is its English text, so English output is the key
// itself, formatted as fmt formats it: adding a language never changes
// a byte of what English readers see. Other languages go through
// golang.org/x/text/message, which finds the translation in the
// catalogue and writes numbers as the reader's locale does.
//
// Files: i18n.go the catalogue, negotiation and Printer; catalog_en.go
// and catalog_ja.go each language's messages; width.go padding by
// terminal columns.
//
// Call sites mark a message as p.T("...") (p.Text("...") for a text
// with a percent sign, p.N("...", "...") when it counts) in Go and
// {{T "..."}} ({{TH "..."}} for HTML) in templates; TestCatalogueComplete
// walks both for keys missing from a
// catalogue.
package i18n

import (
	"fmt"
	"maps"
	"strings"
	"time"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"golang.org/x/text/message/catalog"
)

// The languages spoken; English is the fallback.
var (
	English  = language.English
	Japanese = language.Japanese
)

// Catalog is every language's messages. Build it once (New) and pass it
// to what renders text.
type Catalog struct {
	tags    []language.Tag
	matcher language.Matcher
	msgs    map[language.Tag]map[string]string
	cat     catalog.Catalog
}

// spoken is a catalogue that only negotiates: the languages and their
// matcher, without the messages, which cost a millisecond to build.
func spoken() *Catalog {
	tags := []language.Tag{English, Japanese}
	return &Catalog{tags: tags, matcher: language.NewMatcher(tags)}
}

// New builds the catalogue from each language's messages.
func New() (*Catalog, error) {
	c := spoken()
	c.msgs = map[language.Tag]map[string]string{English: {}, Japanese: japanese()}
	for _, k := range english() {
		c.msgs[English][k] = k
	}
	b := catalog.NewBuilder(catalog.Fallback(English))
	for tag, m := range c.msgs {
		for k, v := range m {
			if err := b.SetString(tag, k, v); err != nil {
				return nil, fmt.Errorf("i18n: message %q in %s: %w", k, tag, err)
			}
		}
	}
	c.cat = b
	return c, nil
}

// Has reports whether lang's catalogue holds key.
func (c *Catalog) Has(lang language.Tag, key string) bool {
	_, ok := c.msgs[lang][key]
	return ok
}

// Keys are lang's message keys.
func (c *Catalog) Keys(lang language.Tag) []string {
	var out []string
	for k := range c.msgs[lang] {
		out = append(out, k)
	}
	return out
}

// Languages are the languages spoken, English first.
func (c *Catalog) Languages() []language.Tag { return c.tags }

// Accept is the language for an Accept-Language header: the spoken one
// the browser prefers most (q-values honoured), else English.
func (c *Catalog) Accept(header string) language.Tag {
	prefs, _, err := language.ParseAcceptLanguage(header)
	if err != nil || len(prefs) == 0 {
		return English
	}
	return c.match(prefs...)
}

// Env is the language of a terminal: the first of LC_ALL, LC_MESSAGES
// and LANG that is set, as POSIX spells it (ja_JP.UTF-8); C, POSIX and
// anything not spoken are English.
func (c *Catalog) Env(getenv func(string) string) language.Tag {
	for _, k := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		v := getenv(k)
		if v == "" {
			continue
		}
		v, _, _ = strings.Cut(v, ".")
		v, _, _ = strings.Cut(v, "@")
		if v == "C" || v == "POSIX" {
			return English
		}
		t, err := language.Parse(strings.ReplaceAll(v, "_", "-"))
		if err != nil {
			return English
		}
		return c.match(t)
	}
	return English
}

func (c *Catalog) match(prefs ...language.Tag) language.Tag {
	_, i, conf := c.matcher.Match(prefs...)
	if conf == language.No {
		return English
	}
	return c.tags[i]
}

// ForEnv is the printer of a terminal's language (Catalog.Env), for a
// command that prints once and exits. The messages are built only for a
// language other than English, which needs none; should they not build
// (TestPrinter builds them), it speaks English.
func ForEnv(getenv func(string) string) *Printer {
	if getenv == nil {
		return Plain()
	}
	lang := spoken().Env(getenv)
	if lang == English {
		return Plain()
	}
	c, err := New()
	if err != nil {
		return Plain()
	}
	return c.Printer(lang)
}

// Plain is an English printer, which needs no catalogue: for callers
// that have no reader's language.
func Plain() *Printer { return &Printer{lang: English} }

// Printer speaks one language; it is safe for concurrent use. A nil
// Printer speaks English, as Plain.
type Printer struct {
	lang language.Tag
	msgs map[string]string
	p    *message.Printer
}

// Printer is the printer of lang (English when lang is not spoken).
func (c *Catalog) Printer(lang language.Tag) *Printer {
	if _, ok := c.msgs[lang]; !ok {
		lang = English
	}
	return &Printer{lang: lang, msgs: c.msgs[lang], p: message.NewPrinter(lang, message.Catalog(c.cat))}
}

// English is the English printer: what callers without a reader use.
func (c *Catalog) English() *Printer { return c.Printer(English) }

// Lang is the printer's language as HTML's lang attribute spells it.
func (p *Printer) Lang() string {
	if p == nil {
		return English.String()
	}
	return p.lang.String()
}

// T is message key in p's language. Without args the message is
// literal text; with args it is a format, as fmt's (%% is a percent
// sign). English is fmt's own output, byte for byte; a key missing from
// the catalogue is shown in English.
func (p *Printer) T(key string, args ...any) string {
	if len(args) == 0 {
		return p.Text(key)
	}
	if p == nil || p.lang == English {
		return fmt.Sprintf(key, args...)
	}
	return p.p.Sprintf(key, args...)
}

// N is a message that counts n: English says one when n is 1, else
// many; Japanese has one form, the catalogue's translation of many.
// Both are formats taking args.
func (p *Printer) N(n int, one, many string, args ...any) string {
	if p == nil || p.lang == English {
		if n == 1 {
			return fmt.Sprintf(one, args...)
		}
		return fmt.Sprintf(many, args...)
	}
	return p.p.Sprintf(many, args...)
}

// Messages are p's catalogue, key to translation, for a script that
// speaks p's language (board.js); nil for English, which needs none.
func (p *Printer) Messages() map[string]string {
	if p == nil || p.lang == English {
		return nil
	}
	return maps.Clone(p.msgs)
}

// Text is message key in p's language as literal text (no format).
func (p *Printer) Text(key string) string {
	if p == nil {
		return key
	}
	if s, ok := p.msgs[key]; ok {
		return s
	}
	return key
}

// Time is t in layout, one of the English layouts below, as p's reader
// writes dates: Japanese says 2026年11月28日.
func (p *Printer) Time(t time.Time, layout string) string {
	if p != nil && p.lang == Japanese {
		layout, _ = japaneseLayout(layout)
	}
	return t.Format(layout)
}

// japaneseLayout is English layout l's Japanese form; an English layout
// not here is kept (it is numeric).
func japaneseLayout(l string) (string, bool) {
	switch l {
	case "2006-01-02 15:04:05 MST":
		return "2006年1月2日 15:04:05 MST", true
	case "2006-01-02 15:04:05":
		return "2006年1月2日 15:04:05", true
	case "2006-01-02 15:04 MST":
		return "2006年1月2日 15:04 MST", true
	case "2006-01-02 15:04":
		return "2006年1月2日 15:04", true
	case "2006-01-02":
		return "2006年1月2日", true
	case "01-02 15:04", "Jan 2 15:04":
		return "1月2日 15:04", true
	}
	return l, false
}
