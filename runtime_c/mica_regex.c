/* mica_regex.c: regular expressions (LANGUAGE.md section 11): RE2 syntax,
 * matched by a Pike VM in time linear in the text.
 *
 * A pattern is parsed into a tree (the parse_* functions, each under its
 * grammar rule), the tree is compiled into a program of at most
 * MICA_REGEX_MAX_INSTRUCTIONS instructions (emit), and search() runs the
 * program over the text as a list of threads kept in priority order, each
 * with its own captures. Each byte of text moves every thread once, and no two
 * threads stand at one instruction, so a search costs
 * O(len(text) * len(program)) whatever the pattern; the priority order of the
 * list gives the leftmost-first match that Perl, Python and RE2 give.
 *
 * Bytes, not characters: '.' and a class match one byte, so UTF-8 text passes
 * through untouched. A compiled regex is immutable; copies share it through
 * an atomic reference count (tasks may share one).
 */
#include "mica.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ the tree */

enum node_kind { N_EMPTY, N_BYTE, N_CLASS, N_ASSERT, N_GROUP, N_CONCAT, N_ALTERNATE, N_REPEAT };
enum assertion { A_BEGIN_TEXT, A_END_TEXT, A_WORD_BOUNDARY, A_NOT_WORD_BOUNDARY };

typedef struct {
    uint8_t kind;
    uint8_t byte;         /* N_BYTE: the byte; N_ASSERT: the assertion */
    bool greedy;          /* N_REPEAT */
    int32_t min, max;     /* N_REPEAT: counts (max -1: no bound); N_CLASS: min is the class; N_GROUP: min is its number */
    int32_t child, next;  /* first child and next sibling, -1 for none */
} node;

typedef struct {
    uint8_t bits[32]; /* bit b set: byte b is in the class */
} byte_class;

typedef struct {
    const uint8_t *p;
    int64_t len, at;    /* the pattern, and where the parser stands */
    node *nodes;
    int32_t n_nodes, nodes_room;
    byte_class *classes;
    int32_t n_classes, classes_room;
    int32_t groups;     /* capturing groups so far */
    int32_t depth;      /* groups open around the parser */
    bool fold;          /* (?i): letters match either case */
    bool failed;
    char error[160];    /* what is wrong, with its position */
} parser;

#define MAX_DEPTH 1000
#define MAX_COUNT 1000
#define QUOTED 60 /* bytes of the pattern a reason quotes */

static void fail(parser *ps, int64_t at, const char *format, ...) {
    if (ps->failed) return;
    ps->failed = true;
    va_list args;
    va_start(args, format);
    int n = vsnprintf(ps->error, sizeof ps->error, format, args);
    va_end(args);
    if (n >= 0 && (size_t)n < sizeof ps->error)
        snprintf(ps->error + n, sizeof ps->error - (size_t)n, " at position %lld", (long long)at + 1);
}

static void *grow(void *items, int32_t count, int32_t *room, size_t size) {
    if (count < *room) return items;
    int32_t more = *room ? *room * 2 : 16;
    items = mica_resize(items, *room, more, size, 0);
    *room = more;
    return items;
}

/* A pattern of more parts (bytes, classes, groups, repetitions) than this is
 * refused as too large before its tree grows further: one that would still
 * compile to few enough instructions is mostly parts that match nothing,
 * like (?:) or a{0}. */
#define MAX_NODES (4 * MICA_REGEX_MAX_INSTRUCTIONS)

static int32_t new_node(parser *ps, uint8_t kind) {
    if (ps->n_nodes == MAX_NODES) {
        fail(ps, ps->at, "too large: more than %d parts", MAX_NODES);
        return 0; /* a node to write that nobody reads: the parse has failed */
    }
    ps->nodes = grow(ps->nodes, ps->n_nodes, &ps->nodes_room, sizeof(node));
    ps->nodes[ps->n_nodes] = (node){.kind = kind, .child = -1, .next = -1};
    return ps->n_nodes++;
}

static int32_t class_node(parser *ps, const byte_class *set) {
    ps->classes = grow(ps->classes, ps->n_classes, &ps->classes_room, sizeof(byte_class));
    ps->classes[ps->n_classes] = *set;
    int32_t n = new_node(ps, N_CLASS);
    ps->nodes[n].min = ps->n_classes++;
    return n;
}

static void add_range(byte_class *c, int lo, int hi) {
    for (int b = lo; b <= hi; b++) c->bits[b >> 3] |= (uint8_t)(1u << (b & 7));
}

static bool in_class(const byte_class *c, uint8_t b) {
    return c->bits[b >> 3] >> (b & 7) & 1;
}

static void negate(byte_class *c) {
    for (int i = 0; i < 32; i++) c->bits[i] = (uint8_t)~c->bits[i];
}

static void add_class(byte_class *into, const byte_class *c) {
    for (int i = 0; i < 32; i++) into->bits[i] |= c->bits[i];
}

/* (?i): each ASCII letter in the class brings its other case. */
static void fold_case(byte_class *c) {
    for (int b = 'A'; b <= 'Z'; b++)
        if (in_class(c, (uint8_t)b) || in_class(c, (uint8_t)(b + 32))) add_range(c, b, b), add_range(c, b + 32, b + 32);
}

static bool is_word(uint8_t b) {
    return (b >= '0' && b <= '9') || (b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') || b == '_';
}

static bool is_digit(uint8_t b) {
    return b >= '0' && b <= '9';
}

/* \d \w \s and their complements \D \W \S, as RE2 defines them (ASCII). */
static bool shorthand(uint8_t letter, byte_class *c) {
    memset(c, 0, sizeof *c);
    switch (letter | 0x20) {
    case 'd': add_range(c, '0', '9'); break;
    case 'w': add_range(c, '0', '9'); add_range(c, 'A', 'Z'); add_range(c, 'a', 'z'); add_range(c, '_', '_'); break;
    case 's': add_range(c, '\t', '\n'); add_range(c, '\f', '\r'); add_range(c, ' ', ' '); break;
    default: return false;
    }
    if (letter >= 'A' && letter <= 'Z') negate(c);
    return true;
}

/* [[:name:]] inside a class, as RE2 and POSIX define them (ASCII). */
static bool posix_class(const char *name, size_t n, byte_class *c) {
    static const struct { const char *name; const char *ranges; } table[] = {
        {"alnum", "09AZaz"}, {"alpha", "AZaz"}, {"ascii", "\x01\x7f"}, {"blank", "\t\t  "},
        {"cntrl", "\x01\x1f\x7f\x7f"}, {"digit", "09"}, {"graph", "!~"}, {"lower", "az"}, {"print", " ~"},
        {"punct", "!/:@[`{~"}, {"space", "\t\r  "}, {"upper", "AZ"}, {"word", "09AZaz__"}, {"xdigit", "09AFaf"},
    };
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strlen(table[i].name) != n || memcmp(table[i].name, name, n) != 0) continue;
        if (strcmp(table[i].name, "ascii") == 0 || strcmp(table[i].name, "cntrl") == 0)
            add_range(c, 0, 0); /* the ranges' text cannot hold the NUL byte they start at */
        for (const char *r = table[i].ranges; *r; r += 2) add_range(c, (uint8_t)r[0], (uint8_t)r[1]);
        return true;
    }
    return false;
}

static int hex_value(uint8_t b) {
    if (b >= '0' && b <= '9') return b - '0';
    if ((b | 0x20) >= 'a' && (b | 0x20) <= 'f') return (b | 0x20) - 'a' + 10;
    return -1;
}

/* What one escape stands for: a byte, a class, or (outside a class) an assertion. */
enum escape_kind { E_BYTE, E_CLASS, E_ASSERT };
typedef struct {
    enum escape_kind kind;
    uint8_t byte; /* E_BYTE: the byte; E_ASSERT: the assertion */
    byte_class set;
} escape;

// escape = '\' ( 'd' | 'D' | 'w' | 'W' | 's' | 'S' | 'b' | 'B' | 'A' | 'z' | 'n' | 't' | 'r' | 'f' | 'v'
//              | 'x' hex hex | punctuation )
static escape parse_escape(parser *ps, bool in_brackets) {
    int64_t start = ps->at++; /* the backslash */
    escape e = {.kind = E_BYTE};
    if (ps->at >= ps->len) {
        fail(ps, start, "trailing '\\'");
        return e;
    }
    uint8_t c = ps->p[ps->at++];
    if (shorthand(c, &e.set)) {
        e.kind = E_CLASS;
        return e;
    }
    const char *assertions = "AzbB";
    const char *at_assertion = strchr(assertions, c);
    if (c && at_assertion && !in_brackets) {
        e.kind = E_ASSERT;
        e.byte = (uint8_t)(at_assertion - assertions); /* enum assertion's order */
        return e;
    }
    const char *controls = "n\nt\tr\rf\fv\v";
    for (const char *k = controls; *k; k += 2)
        if (c == (uint8_t)k[0]) {
            e.byte = (uint8_t)k[1];
            return e;
        }
    if (c == 'x') {
        int hi = ps->at < ps->len ? hex_value(ps->p[ps->at]) : -1;
        int lo = ps->at + 1 < ps->len ? hex_value(ps->p[ps->at + 1]) : -1;
        if (hi < 0 || lo < 0) {
            fail(ps, start, "'\\x' needs two hex digits");
            return e;
        }
        ps->at += 2;
        e.byte = (uint8_t)(hi * 16 + lo);
        return e;
    }
    if (c >= '1' && c <= '9') {
        fail(ps, start, "backreferences are not supported (matching stays linear in the text)");
        return e;
    }
    if (c < 0x80 && !is_word(c)) {
        e.byte = c; /* escaped punctuation stands for itself */
        return e;
    }
    if (c >= 0x80) fail(ps, start, "invalid escape of byte 0x%02X", c);
    else fail(ps, start, "invalid escape '\\%c'%s", c, in_brackets && at_assertion ? " inside a class" : "");
    return e;
}

// class_item = '[:' name ':]' | '[:^' name ':]' | escape | byte [ '-' ( escape | byte ) ]
static void parse_class_item(parser *ps, byte_class *set) {
    int64_t start = ps->at;
    if (ps->p[ps->at] == '[' && ps->at + 1 < ps->len && ps->p[ps->at + 1] == ':') {
        const uint8_t *close = NULL;
        for (int64_t k = ps->at + 2; k + 1 < ps->len; k++)
            if (ps->p[k] == ':' && ps->p[k + 1] == ']') {
                close = ps->p + k;
                break;
            }
        if (close) {
            const char *name = (const char *)ps->p + ps->at + 2;
            bool negated = *name == '^';
            name += negated;
            byte_class named;
            if (!posix_class(name, (size_t)((const char *)close - name), &named)) {
                fail(ps, start, "unknown class '%.*s'", (int)(close + 2 - (ps->p + start)), ps->p + start);
                return;
            }
            if (negated) negate(&named);
            add_class(set, &named);
            ps->at = close + 2 - ps->p;
            return;
        }
    }
    int lo;
    if (ps->p[ps->at] == '\\') {
        escape e = parse_escape(ps, true);
        if (e.kind == E_CLASS) {
            add_class(set, &e.set);
            return;
        }
        lo = e.byte;
    } else {
        lo = ps->p[ps->at++];
    }
    int hi = lo;
    if (ps->at + 1 < ps->len && ps->p[ps->at] == '-' && ps->p[ps->at + 1] != ']') {
        ps->at++;
        if (ps->p[ps->at] == '\\') {
            escape e = parse_escape(ps, true);
            if (e.kind == E_CLASS) {
                fail(ps, start, "a range cannot end in a class like '\\%c'", ps->p[ps->at - 1]);
                return;
            }
            hi = e.byte;
        } else {
            hi = ps->p[ps->at++];
        }
        if (hi < lo) {
            fail(ps, start, "invalid range '%.*s'", (int)(ps->at - start), ps->p + start);
            return;
        }
    }
    add_range(set, lo, hi);
}

// class = '[' [ '^' ] ( ']' | class_item ) class_item* ']'     (a ']' first is a byte)
static int32_t parse_class(parser *ps) {
    int64_t start = ps->at++;
    bool negated = ps->at < ps->len && ps->p[ps->at] == '^';
    ps->at += negated;
    byte_class set = {{0}};
    bool first = true;
    while (!ps->failed) {
        if (ps->at >= ps->len) {
            fail(ps, start, "missing ']' for the '['");
            break;
        }
        if (ps->p[ps->at] == ']' && !first) {
            ps->at++;
            break;
        }
        parse_class_item(ps, &set);
        first = false;
    }
    if (ps->fold) fold_case(&set); /* before the complement: (?i)[^a] refuses 'A' too */
    if (negated) negate(&set);
    return class_node(ps, &set);
}

static int32_t parse_alternation(parser *ps);

/* After '(?': flags, as in (?i) or (?i-i:...), into *fold; answers the byte
 * that ends them, ')' (they hold to the end of the group around them) or
 * ':' (they hold inside this group), or 0 after a failure. */
static uint8_t parse_flags(parser *ps, int64_t start, bool *fold) {
    bool on = true, any = false;
    for (; ps->at < ps->len; ps->at++) {
        uint8_t c = ps->p[ps->at];
        if (c == 'i') {
            *fold = on;
            any = true;
        } else if (c == '-' && on) {
            on = false;
        } else if ((c == ')' || c == ':') && any && ps->p[ps->at - 1] != '-') {
            ps->at++;
            return c;
        } else {
            fail(ps, ps->at, "unknown group flag '%c'", c);
            return 0;
        }
    }
    fail(ps, start, "missing ')' for the '('");
    return 0;
}

// group = '(' [ '?:' | '?P<' name '>' | '?' flags ':' ] alternation ')' | '(?' flags ')'
static int32_t parse_group(parser *ps) {
    int64_t start = ps->at++;
    bool capturing = true, outer_fold = ps->fold;
    if (ps->at < ps->len && ps->p[ps->at] == '?') {
        const char *rest = (const char *)ps->p + ps->at;
        int64_t left = ps->len - ps->at;
        if (left >= 2 && rest[1] == ':') {
            capturing = false;
            ps->at += 2;
        } else if (left >= 3 && rest[1] == 'P' && rest[2] == '<') {
            int64_t k = ps->at + 3; /* a named group captures; Mica numbers its groups only */
            while (k < ps->len && is_word(ps->p[k])) k++;
            if (k == ps->at + 3 || k >= ps->len || ps->p[k] != '>') {
                fail(ps, start, "a group name is letters, digits and '_' between '(?P<' and '>'");
                return -1;
            }
            ps->at = k + 1;
        } else if (left >= 2 && (rest[1] == '=' || rest[1] == '!' || (rest[1] == '<' && left >= 3 &&
                                                                      (rest[2] == '=' || rest[2] == '!')))) {
            fail(ps, start, "lookaround '(?%.*s' is not supported (matching stays linear in the text)",
                 rest[1] == '<' ? 2 : 1, rest + 1);
            return -1;
        } else {
            ps->at++;
            uint8_t end = parse_flags(ps, start, &ps->fold);
            if (end == ')') return new_node(ps, N_EMPTY);
            if (end == 0) return -1;
            capturing = false;
        }
    }
    if (++ps->depth > MAX_DEPTH) {
        fail(ps, start, "groups nested more than %d deep", MAX_DEPTH);
        return -1;
    }
    int32_t number = capturing ? ++ps->groups : 0;
    int32_t inner = parse_alternation(ps);
    ps->depth--;
    ps->fold = outer_fold;
    if (ps->failed) return -1;
    if (ps->at >= ps->len || ps->p[ps->at] != ')') {
        fail(ps, start, "missing ')' for the '('");
        return -1;
    }
    ps->at++;
    if (!capturing) return inner;
    int32_t n = new_node(ps, N_GROUP);
    ps->nodes[n].min = number;
    ps->nodes[n].child = inner;
    return n;
}

/* One byte; under (?i) a letter is the class of its two cases. */
static int32_t byte_node(parser *ps, uint8_t b) {
    if (ps->fold && ((b | 0x20) >= 'a' && (b | 0x20) <= 'z')) {
        byte_class both = {{0}};
        add_range(&both, b | 0x20, b | 0x20);
        add_range(&both, b & ~0x20, b & ~0x20);
        return class_node(ps, &both);
    }
    int32_t n = new_node(ps, N_BYTE);
    ps->nodes[n].byte = b;
    return n;
}

// atom = group | class | '.' | '^' | '$' | escape | byte
static int32_t parse_atom(parser *ps) {
    uint8_t c = ps->p[ps->at];
    if (c == '(') return parse_group(ps);
    if (c == '[') return parse_class(ps);
    if (c == '.') {
        ps->at++;
        byte_class any = {{0}};
        add_range(&any, '\n', '\n');
        negate(&any); /* every byte but a newline, as RE2 and Python have it */
        return class_node(ps, &any);
    }
    if (c == '^' || c == '$') {
        ps->at++;
        int32_t n = new_node(ps, N_ASSERT);
        ps->nodes[n].byte = c == '^' ? A_BEGIN_TEXT : A_END_TEXT;
        return n;
    }
    if (c == '\\') {
        escape e = parse_escape(ps, false);
        if (e.kind == E_CLASS) return class_node(ps, &e.set);
        if (e.kind == E_ASSERT) {
            int32_t n = new_node(ps, N_ASSERT);
            ps->nodes[n].byte = e.byte;
            return n;
        }
        return byte_node(ps, e.byte);
    }
    ps->at++;
    return byte_node(ps, c);
}

/* At '{': a well-formed count {n}, {n,} or {n,m} moves past it and answers
 * true; anything else is a literal '{', as in RE2 and Python. */
static bool parse_count(parser *ps, int32_t *min, int32_t *max) {
    int64_t k = ps->at + 1, start = ps->at;
    int64_t values[2] = {-1, -1};
    bool comma = false;
    for (int part = 0; part < 2; part++) {
        int64_t digits = 0, value = 0;
        while (k < ps->len && is_digit(ps->p[k])) {
            if (value <= MAX_COUNT) value = value * 10 + (ps->p[k] - '0');
            k++, digits++;
        }
        if (digits) values[part] = value;
        else if (part == 0) return false;
        if (part == 0 && k < ps->len && ps->p[k] == ',') {
            comma = true;
            k++;
        } else {
            break;
        }
    }
    if (k >= ps->len || ps->p[k] != '}') return false;
    ps->at = k + 1;
    *min = (int32_t)(values[0] > MAX_COUNT ? MAX_COUNT + 1 : values[0]);
    *max = comma ? (int32_t)(values[1] > MAX_COUNT ? MAX_COUNT + 1 : values[1]) : *min;
    if (*min > MAX_COUNT || *max > MAX_COUNT)
        fail(ps, start, "repetition count above %d", MAX_COUNT);
    else if (*max >= 0 && *max < *min)
        fail(ps, start, "repetition count {%d,%d} has its minimum above its maximum", *min, *max);
    return true;
}

/* At a repetition operator: moves past it (and a lazy '?') and answers true. */
static bool parse_operator(parser *ps, int32_t *min, int32_t *max, bool *greedy) {
    if (ps->at >= ps->len) return false;
    uint8_t c = ps->p[ps->at];
    if (c == '*' || c == '+' || c == '?') {
        *min = c == '+';
        *max = c == '?' ? 1 : -1;
        ps->at++;
    } else if (c != '{' || !parse_count(ps, min, max)) {
        return false;
    }
    *greedy = !(ps->at < ps->len && ps->p[ps->at] == '?');
    ps->at += !*greedy;
    return true;
}

/* A repetition operator where none may stand: fails with `why` (which takes
 * the operator's text) and answers true. */
static bool stray_operator(parser *ps, const char *why) {
    int64_t start = ps->at;
    int32_t min, max;
    bool greedy;
    if (!parse_operator(ps, &min, &max, &greedy)) return false;
    fail(ps, start, why, (int)(ps->at - start), ps->p + start);
    return true;
}

// repetition = atom [ ( '*' | '+' | '?' | '{' n [ ',' [ m ] ] '}' ) [ '?' ] ]
static int32_t parse_repetition(parser *ps) {
    if (stray_operator(ps, "missing argument to repetition operator '%.*s'")) return -1;
    int32_t atom = parse_atom(ps);
    int32_t min, max;
    bool greedy;
    if (ps->failed || !parse_operator(ps, &min, &max, &greedy)) return atom;
    if (stray_operator(ps, "repetition operator '%.*s' follows another")) return -1;
    int32_t n = new_node(ps, N_REPEAT);
    ps->nodes[n] = (node){.kind = N_REPEAT, .greedy = greedy, .min = min, .max = max, .child = atom, .next = -1};
    return n;
}

/* A node holding `first` and its siblings, or the one node itself. */
static int32_t list_node(parser *ps, uint8_t kind, int32_t first, int32_t count) {
    if (count == 1) return first;
    int32_t n = new_node(ps, count ? kind : N_EMPTY);
    ps->nodes[n].child = first;
    return n;
}

// concatenation = repetition*     (up to a '|', a ')' or the end)
static int32_t parse_concatenation(parser *ps) {
    int32_t first = -1, last = -1, count = 0;
    while (!ps->failed && ps->at < ps->len && ps->p[ps->at] != '|' && ps->p[ps->at] != ')') {
        int32_t item = parse_repetition(ps);
        if (ps->failed) return -1;
        if (last < 0) first = item;
        else ps->nodes[last].next = item;
        last = item;
        count++;
    }
    return list_node(ps, N_CONCAT, first, count);
}

// alternation = concatenation ( '|' concatenation )*
static int32_t parse_alternation(parser *ps) {
    int32_t first = parse_concatenation(ps), last = first, count = 1;
    while (!ps->failed && ps->at < ps->len && ps->p[ps->at] == '|') {
        ps->at++;
        int32_t item = parse_concatenation(ps);
        if (ps->failed) return -1;
        ps->nodes[last].next = item;
        last = item;
        count++;
    }
    return list_node(ps, N_ALTERNATE, first, count);
}

/* ------------------------------------------------------------ the program */

enum opcode { I_BYTE, I_CLASS, I_SPLIT, I_JMP, I_SAVE, I_ASSERT, I_MATCH };

typedef struct {
    uint8_t op;
    uint8_t byte;  /* I_BYTE: the byte; I_ASSERT: the assertion */
    int32_t x, y;  /* I_SPLIT: the preferred and the other next; I_JMP: the next; I_SAVE: the slot; I_CLASS: the class */
} instruction;

struct mica_regex_program {
    int64_t refs;
    int32_t length;  /* instructions */
    int32_t groups;  /* capturing groups; the slots are 2 * (groups + 1) */
    instruction *code;
    byte_class *classes;
    /* Where a search may skip ahead: with no thread running, only these bytes
     * can start a match (none of this when a match can be empty). */
    bool skips;
    int16_t only_first;  /* the one byte that can, or -1 */
    byte_class first;
};

typedef struct {
    const parser *ps;
    instruction *code;
    int32_t length;
    bool too_large;
} emitter;

static int32_t put(emitter *e, uint8_t op, uint8_t byte, int32_t x, int32_t y) {
    if (e->length >= MICA_REGEX_MAX_INSTRUCTIONS) {
        e->too_large = true;
        return 0;
    }
    e->code[e->length] = (instruction){op, byte, x, y};
    return e->length++;
}

static void emit(emitter *e, int32_t n);

/* x{min,max}: min copies, then a loop (no bound) or max - min nested options. */
static void emit_repeat(emitter *e, const node *r) {
    int32_t copies = r->max < 0 && r->min > 0 ? r->min - 1 : r->min;
    for (int32_t i = 0; i < copies && !e->too_large; i++) emit(e, r->child);
    if (r->max < 0) {
        int32_t top = e->length;
        if (r->min == 0) { /* x*: a split before the body */
            int32_t split = put(e, I_SPLIT, 0, 0, 0);
            emit(e, r->child);
            put(e, I_JMP, 0, top, 0);
            if (e->too_large) return;
            e->code[split].x = r->greedy ? split + 1 : e->length;
            e->code[split].y = r->greedy ? e->length : split + 1;
        } else {           /* the last copy of x+: a split after the body */
            emit(e, r->child);
            int32_t split = put(e, I_SPLIT, 0, 0, 0);
            if (e->too_large) return;
            e->code[split].x = r->greedy ? top : split + 1;
            e->code[split].y = r->greedy ? split + 1 : top;
        }
        return;
    }
    int32_t first = e->length;
    for (int32_t i = r->min; i < r->max && !e->too_large; i++) {
        put(e, I_SPLIT, 0, -1, -1); /* the way out is known at the end */
        emit(e, r->child);
    }
    for (int32_t pc = first; pc < e->length && !e->too_large; pc++) {
        instruction *in = &e->code[pc];
        if (in->op != I_SPLIT || in->x != -1) continue;
        in->x = r->greedy ? pc + 1 : e->length;
        in->y = r->greedy ? e->length : pc + 1;
    }
}

static void emit(emitter *e, int32_t n) {
    if (e->too_large) return;
    const node *nd = &e->ps->nodes[n];
    switch (nd->kind) {
    case N_EMPTY: break;
    case N_BYTE: put(e, I_BYTE, nd->byte, 0, 0); break;
    case N_CLASS: put(e, I_CLASS, 0, nd->min, 0); break;
    case N_ASSERT: put(e, I_ASSERT, nd->byte, 0, 0); break;
    case N_GROUP:
        put(e, I_SAVE, 0, 2 * nd->min, 0);
        emit(e, nd->child);
        put(e, I_SAVE, 0, 2 * nd->min + 1, 0);
        break;
    case N_CONCAT:
        for (int32_t c = nd->child; c >= 0; c = e->ps->nodes[c].next) emit(e, c);
        break;
    case N_ALTERNATE: {
        /* a | b | c: split(a, split(b, c)), each branch jumping to the end */
        int32_t jumps_from = e->length;
        for (int32_t c = nd->child; c >= 0 && !e->too_large; c = e->ps->nodes[c].next) {
            if (e->ps->nodes[c].next < 0) {
                emit(e, c);
                break;
            }
            int32_t split = put(e, I_SPLIT, 0, 0, 0);
            emit(e, c);
            put(e, I_JMP, 0, -1, 0);
            if (e->too_large) return;
            e->code[split].x = split + 1;
            e->code[split].y = e->length;
        }
        for (int32_t pc = jumps_from; pc < e->length && !e->too_large; pc++)
            if (e->code[pc].op == I_JMP && e->code[pc].x == -1) e->code[pc].x = e->length;
        break;
    }
    case N_REPEAT: emit_repeat(e, nd); break;
    }
}

/* ------------------------------------------------------------ compiling */

static void free_program(struct mica_regex_program *p) {
    mica_free(p->code);
    mica_free(p->classes);
    mica_free(p);
}

/* The bytes a match can start with, found by following the program from its
 * start through what reads no byte (assertions taken to hold), into p->first;
 * p->skips is false when a match can be empty, so any place may start one. */
static void first_bytes(struct mica_regex_program *p) {
    int32_t *stack = mica_alloc_elements(2 * (int64_t)p->length + 1, sizeof(int32_t), 0);
    bool *seen = mica_alloc_elements(p->length, sizeof(bool), 0);
    int32_t top = 0;
    bool empty = false;
    stack[top++] = 0;
    while (top > 0 && !empty) {
        int32_t pc = stack[--top];
        if (seen[pc]) continue;
        seen[pc] = true;
        const instruction *in = &p->code[pc];
        switch (in->op) {
        case I_BYTE: add_range(&p->first, in->byte, in->byte); break;
        case I_CLASS: add_class(&p->first, &p->classes[in->x]); break;
        case I_MATCH: empty = true; break;
        case I_SPLIT: stack[top++] = in->y, stack[top++] = in->x; break;
        case I_JMP: stack[top++] = in->x; break;
        default: stack[top++] = pc + 1; break; /* a SAVE or an assertion */
        }
    }
    mica_free(stack);
    mica_free(seen);
    p->skips = !empty;
    p->only_first = -1;
    for (int b = 0, count = 0; b < 256; b++)
        if (in_class(&p->first, (uint8_t)b)) p->only_first = ++count == 1 ? (int16_t)b : -1;
}

/* The program for a pattern, or NULL with the reason left for LastError. */
static struct mica_regex_program *compile_pattern(const uint8_t *pattern, int64_t len) {
    parser ps = {.p = pattern, .len = len};
    int32_t root = parse_alternation(&ps);
    if (!ps.failed && ps.at < ps.len) fail(&ps, ps.at, "unmatched ')'");
    struct mica_regex_program *p = NULL;
    /* the reason quotes a long pattern by its start: the position says where */
    int shown = len > QUOTED ? QUOTED : (int)len;
    const char *more = len > QUOTED ? "..." : "";
    if (!ps.failed && ps.groups > MICA_REGEX_MAX_GROUPS) {
        mica_fail("pattern '%.*s%s': more than %d groups", shown, pattern, more, MICA_REGEX_MAX_GROUPS);
    } else if (ps.failed) {
        mica_fail("pattern '%.*s%s': %s", shown, pattern, more, ps.error);
    } else {
        emitter e = {.ps = &ps, .code = mica_alloc_elements(MICA_REGEX_MAX_INSTRUCTIONS, sizeof(instruction), 0)};
        put(&e, I_SAVE, 0, 0, 0);
        emit(&e, root);
        put(&e, I_SAVE, 0, 1, 0);
        put(&e, I_MATCH, 0, 0, 0);
        if (e.too_large) {
            mica_fail("pattern '%.*s%s': too large: more than %d instructions", shown, pattern, more,
                      MICA_REGEX_MAX_INSTRUCTIONS);
            mica_free(e.code);
        } else {
            p = mica_alloc(sizeof *p, 0);
            p->refs = 1;
            p->length = e.length;
            p->groups = ps.groups;
            p->code = mica_resize(e.code, MICA_REGEX_MAX_INSTRUCTIONS, e.length, sizeof(instruction), 0);
            p->classes = ps.classes;
            ps.classes = NULL;
            first_bytes(p);
        }
    }
    mica_free(ps.nodes);
    mica_free(ps.classes);
    return p;
}

/* ------------------------------------------------------------ the Pike VM */

/* The threads of one step, in priority order: a sparse set of instructions,
 * each with its captures. */
typedef struct {
    int32_t count;
    int32_t *dense;   /* the instructions, in order */
    int32_t *sparse;  /* instruction -> its index in dense (valid when dense says so) */
    int64_t *slots;   /* count * n_slots captures */
} thread_list;

typedef struct {
    const struct mica_regex_program *p;
    const uint8_t *text;
    int64_t len;
    int32_t n_slots;
    thread_list lists[2];
    int64_t *work;                      /* the captures addthread carries along */
    struct { int32_t pc, slot; int64_t value; } *stack;
} machine;

static bool has(const thread_list *l, int32_t pc) {
    int32_t i = l->sparse[pc];
    return i < l->count && l->dense[i] == pc;
}

static bool holds(const machine *m, uint8_t assertion, int64_t pos) {
    bool before = pos > 0 && is_word(m->text[pos - 1]), after = pos < m->len && is_word(m->text[pos]);
    switch (assertion) {
    case A_BEGIN_TEXT: return pos == 0;
    case A_END_TEXT: return pos == m->len;
    case A_WORD_BOUNDARY: return before != after;
    default: return before == after;
    }
}

/* Adds the thread at pc with captures `slots`, and every thread it reaches
 * without reading a byte, in priority order; those already in the list are
 * taken by a thread of higher priority. An explicit stack: a SAVE pushes the
 * slot's old value to put back once the branches after it are added. */
static void add_thread(machine *m, thread_list *l, int32_t pc0, int64_t pos, const int64_t *slots) {
    memcpy(m->work, slots, (size_t)m->n_slots * sizeof(int64_t));
    int32_t top = 0;
    m->stack[top++].pc = pc0, m->stack[0].slot = -1;
    while (top > 0) {
        top--;
        if (m->stack[top].slot >= 0) {
            m->work[m->stack[top].slot] = m->stack[top].value;
            continue;
        }
        for (int32_t pc = m->stack[top].pc; !has(l, pc);) {
            l->sparse[pc] = l->count;
            l->dense[l->count] = pc;
            int32_t index = l->count++;
            const instruction *in = &m->p->code[pc];
            if (in->op == I_JMP) {
                pc = in->x;
            } else if (in->op == I_SPLIT) {
                m->stack[top].pc = in->y, m->stack[top++].slot = -1;
                pc = in->x;
            } else if (in->op == I_SAVE) {
                m->stack[top].slot = in->x, m->stack[top++].value = m->work[in->x];
                m->work[in->x] = pos;
                pc++;
            } else if (in->op == I_ASSERT) {
                if (!holds(m, in->byte, pos)) break;
                pc++;
            } else { /* a thread that reads a byte or matches: it keeps these captures */
                memcpy(l->slots + (int64_t)index * m->n_slots, m->work, (size_t)m->n_slots * sizeof(int64_t));
                break;
            }
        }
    }
}

/* The leftmost-first match starting at `from` or later, its captures into
 * `found` (n_slots offsets, -1 for a group that did not take part). A match
 * that is empty and starts at `no_empty_at` is passed over (FindAll's rule
 * after an empty match). With `any`, the first match found ends the search. */
static bool search(machine *m, int64_t from, int64_t no_empty_at, bool any, int64_t *found) {
    thread_list *now = &m->lists[0], *next = &m->lists[1];
    now->count = next->count = 0;
    int64_t *start = m->work + m->n_slots; /* a fresh thread's captures: none yet */
    for (int32_t i = 0; i < m->n_slots; i++) start[i] = -1;
    bool matched = false;
    for (int64_t pos = from; pos <= m->len; pos++) {
        if (!matched && now->count == 0 && m->p->skips) { /* to the next byte that can start a match */
            const struct mica_regex_program *p = m->p;
            if (p->only_first >= 0) {
                const uint8_t *at = memchr(m->text + pos, p->only_first, (size_t)(m->len - pos));
                pos = at ? at - m->text : m->len;
            } else {
                while (pos < m->len && !in_class(&p->first, m->text[pos])) pos++;
            }
            if (pos == m->len) break;
        }
        if (!matched) add_thread(m, now, 0, pos, start); /* the lowest priority: a match starting here */
        if (now->count == 0) break;
        next->count = 0;
        int c = pos < m->len ? m->text[pos] : -1;
        for (int32_t i = 0; i < now->count; i++) {
            const instruction *in = &m->p->code[now->dense[i]];
            const int64_t *slots = now->slots + (int64_t)i * m->n_slots;
            if (in->op == I_MATCH) {
                if (slots[0] == pos && pos == no_empty_at) continue;
                memcpy(found, slots, (size_t)m->n_slots * sizeof(int64_t));
                matched = true;
                if (any) return true;
                break; /* the threads after this one have lower priority */
            }
            bool step = c >= 0 && (in->op == I_BYTE ? c == in->byte : in->op == I_CLASS &&
                                   in_class(&m->p->classes[in->x], (uint8_t)c));
            if (step) add_thread(m, next, now->dense[i] + 1, pos + 1, slots);
        }
        thread_list *t = now;
        now = next;
        next = t;
    }
    return matched;
}

static void list_init(thread_list *l, int32_t length, int32_t n_slots) {
    l->count = 0;
    l->dense = mica_alloc_elements(length, sizeof(int32_t), 0);
    l->sparse = mica_alloc_elements(length, sizeof(int32_t), 0);
    l->slots = mica_alloc_elements((int64_t)length * n_slots, sizeof(int64_t), 0);
}

static void list_free(thread_list *l) {
    mica_free(l->dense);
    mica_free(l->sparse);
    mica_free(l->slots);
}

static void machine_init(machine *m, const struct mica_regex_program *p, const char *text, int64_t len) {
    m->p = p;
    m->text = (const uint8_t *)(text ? text : "");
    m->len = len;
    m->n_slots = 2 * (p->groups + 1);
    list_init(&m->lists[0], p->length, m->n_slots);
    list_init(&m->lists[1], p->length, m->n_slots);
    m->work = mica_alloc_elements(2 * m->n_slots, sizeof(int64_t), 0);
    m->stack = mica_alloc_elements(2 * (int64_t)p->length + 2, sizeof(*m->stack), 0);
}

static void machine_free(machine *m) {
    list_free(&m->lists[0]);
    list_free(&m->lists[1]);
    mica_free(m->work);
    mica_free(m->stack);
}

/* ------------------------------------------------------------ Mica's regex values */

static const struct mica_regex_program *compiled(mica_regex re, int line) {
    if (!re.program) mica_trap(line, "a regex used before Compile gave it a pattern");
    return re.program;
}

bool mica_regex_compile(mica_string pattern, mica_regex *re) {
    struct mica_regex_program *p = compile_pattern((const uint8_t *)(pattern.data ? pattern.data : ""), pattern.len);
    if (!p) return false;
    mica_regex_move(re, (mica_regex){p});
    return true;
}

mica_regex mica_regex_copy(mica_regex re) {
    if (re.program) __atomic_add_fetch(&re.program->refs, 1, __ATOMIC_RELAXED);
    return re;
}

void mica_regex_drop(mica_regex *re) {
    if (re->program && __atomic_sub_fetch(&re->program->refs, 1, __ATOMIC_ACQ_REL) == 0) free_program(re->program);
    re->program = NULL;
}

void mica_regex_assign(mica_regex *dst, mica_regex src) {
    mica_regex copy = mica_regex_copy(src); /* copy first: src may be dst */
    mica_regex_drop(dst);
    *dst = copy;
}

void mica_regex_move(mica_regex *dst, mica_regex src) {
    mica_regex_drop(dst);
    *dst = src;
}

int32_t mica_regex_groups(mica_regex re) {
    return re.program ? re.program->groups : 0;
}

bool mica_regex_search(mica_regex re, const char *text, int64_t len, int64_t from, int64_t no_empty_at,
                       int64_t *found) {
    machine m;
    machine_init(&m, re.program, text, len);
    bool matched = search(&m, from, no_empty_at, false, found);
    machine_free(&m);
    return matched;
}

bool mica_regex_is_match(mica_regex re, mica_string s, int line) {
    machine m;
    machine_init(&m, compiled(re, line), s.data, s.len);
    int64_t *found = mica_alloc_elements(m.n_slots, sizeof(int64_t), 0);
    bool matched = search(&m, 0, -1, true, found);
    mica_free(found);
    machine_free(&m);
    return matched;
}

static mica_string span_text(const char *text, int64_t start, int64_t end) {
    return start < 0 ? mica_str_lit("", 0) : mica_str_lit(text + start, end - start);
}

/* The answer is made before the old strings go: s may be one of them. */
bool mica_regex_find(mica_regex re, mica_string s, int64_t *count, mica_string **groups, int line) {
    const struct mica_regex_program *p = compiled(re, line);
    int64_t *found = mica_alloc_elements(2 * (p->groups + 1), sizeof(int64_t), 0);
    bool matched = mica_regex_search(re, s.data, s.len, 0, -1, found);
    int64_t n = matched ? p->groups + 1 : 0;
    mica_string *answer = NULL;
    if (matched) {
        answer = mica_alloc_elements(n, sizeof(mica_string), 0);
        for (int32_t g = 0; g <= p->groups; g++) answer[g] = span_text(s.data, found[2 * g], found[2 * g + 1]);
    }
    mica_free(found);
    mica_strings_drop(count, groups);
    *groups = answer;
    *count = n;
    return matched;
}

/* Every match, left to right, as Python's re.finditer finds them: the next
 * search starts where a match ended, and after an empty match it passes over
 * an empty match at the same place. `each` is given the captures of each. */
void mica_regex_each_match(mica_regex re, mica_string s, void (*each)(void *, const int64_t *), void *context) {
    machine m;
    machine_init(&m, re.program, s.data, s.len);
    int64_t *found = mica_alloc_elements(m.n_slots, sizeof(int64_t), 0);
    int64_t from = 0, no_empty_at = -1;
    while (from <= s.len && search(&m, from, no_empty_at, false, found)) {
        each(context, found);
        from = found[1];
        no_empty_at = found[0] == found[1] ? found[1] : -1;
    }
    mica_free(found);
    machine_free(&m);
}

typedef struct {
    mica_string s;
    int64_t count, capacity;
    mica_string *items;
} match_list;

static void collect(void *context, const int64_t *found) {
    match_list *l = context;
    mica_strings_push(&l->count, &l->items, &l->capacity, span_text(l->s.data, found[0], found[1]));
}

void mica_regex_find_all(mica_regex re, mica_string s, int64_t *count, mica_string **matches, int line) {
    compiled(re, line);
    match_list l = {.s = s};
    mica_regex_each_match(re, s, collect, &l);
    mica_strings_drop(count, matches);
    *matches = l.items;
    *count = l.count;
}

/* The text being built by ReplaceAll. */
typedef struct {
    mica_string s, template;
    int32_t groups;
    int64_t copied; /* s is copied up to here */
    int64_t len, room;
    char *out;
} replacement;

static void append(replacement *r, const char *bytes, int64_t n) {
    if (n <= 0) return;
    if (r->len + n + 1 > r->room) {
        int64_t more = 2 * (r->len + n + 1);
        r->out = mica_resize(r->out, r->room, more, 1, 0);
        r->room = more;
    }
    memcpy(r->out + r->len, bytes, (size_t)n);
    r->len += n;
}

/* The template with $n (or ${n}) the group n's text, $0 the match, $$ a '$'. */
static void substitute(void *context, const int64_t *found) {
    replacement *r = context;
    append(r, r->s.data + r->copied, found[0] - r->copied);
    r->copied = found[1];
    const char *t = r->template.data;
    int64_t n = r->template.len;
    for (int64_t i = 0; i < n; i++) {
        if (t[i] != '$' || i + 1 == n) {
            append(r, t + i, 1);
            continue;
        }
        int64_t k = i + 1;
        bool braced = t[k] == '{';
        k += braced;
        int64_t group = 0, digits = 0;
        while (k < n && is_digit((uint8_t)t[k])) {
            if (group <= r->groups) group = group * 10 + (t[k] - '0');
            k++, digits++;
        }
        if (t[i + 1] == '$') {
            append(r, "$", 1);
            i++;
        } else if (digits && (!braced || (k < n && t[k] == '}'))) {
            if (group <= r->groups && found[2 * group] >= 0)
                append(r, r->s.data + found[2 * group], found[2 * group + 1] - found[2 * group]);
            i = k - 1 + braced;
        } else {
            append(r, "$", 1); /* a '$' that names no group stands for itself */
        }
    }
}

mica_string mica_regex_replace_all(mica_regex re, mica_string s, mica_string template, int line) {
    const struct mica_regex_program *p = compiled(re, line);
    replacement r = {.s = s, .template = template, .groups = p->groups};
    mica_regex_each_match(re, s, substitute, &r);
    append(&r, s.data + r.copied, s.len - r.copied);
    mica_string out = mica_str_lit(r.out ? r.out : "", r.len);
    mica_free(r.out);
    return out;
}
