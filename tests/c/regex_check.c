/* regex_check.c: the regex engine's test harness, built with the part of the
 * runtime it needs (mica_core.c, mica_output.c, mica_print.c, mica_string.c,
 * mica_regex.c) by tests/test_regex.py and bench/regex.py, and run once over
 * many cases.
 *
 * Reads lines from stdin, each a command and tab-separated fields:
 *   S <pattern> <text>             the leftmost-first search from 0
 *   A <pattern> <text>             every match, as FindAll finds them
 *   R <pattern> <text> <template>  ReplaceAll
 *   T <pattern> <text> <repeats>   times finding every match, <repeats> times (bench/regex.py)
 * Fields may hold \t, \n and \\ escapes. Answers one line per command:
 *   error <reason>                 the pattern does not compile
 *   none                           no match
 *   match <start> <end> ...        byte offsets of the match and of each group (-1 -1: did not take part)
 *   all <start> <end> ...          the spans of every match
 *   text <replaced>                with the same escapes
 *   seconds <best> matches <count> the best of the repeats, and how many matches
 */
#include "../../runtime_c/mica.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The harness is a Mica program as the runtime sees one: mica_core.c's main
 * runs mica_program, and the reasons come through the real LastError. */
const char *const mica_source_names[] = {"regex_check"};
const int mica_source_count = 1;

/* Undoes the escapes of one field in place; answers its length. */
static int64_t unescape(char *field) {
    char *out = field;
    for (char *in = field; *in; in++) {
        if (*in == '\\' && in[1]) {
            in++;
            *out++ = *in == 't' ? '\t' : *in == 'n' ? '\n' : *in;
        } else {
            *out++ = *in;
        }
    }
    return out - field;
}

static void print_escaped(const char *bytes, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        char c = bytes[i];
        if (c == '\t') fputs("\\t", stdout);
        else if (c == '\n') fputs("\\n", stdout);
        else if (c == '\\') fputs("\\\\", stdout);
        else putchar(c);
    }
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void print_span(void *context, const int64_t *found) {
    (void)context;
    printf(" %lld %lld", (long long)found[0], (long long)found[1]);
}

static void count_match(void *context, const int64_t *found) {
    (void)found;
    ++*(int64_t *)context;
}

static void answer(char command, mica_regex re, mica_string text, mica_string extra) {
    int32_t slots = 2 * (mica_regex_groups(re) + 1);
    int64_t *found = mica_alloc_elements(slots, sizeof(int64_t), 0);
    if (command == 'S') {
        if (!mica_regex_search(re, text.data, text.len, 0, -1, found)) {
            puts("none");
        } else {
            fputs("match", stdout);
            for (int32_t i = 0; i < slots; i++) printf(" %lld", (long long)found[i]);
            putchar('\n');
        }
    } else if (command == 'A') {
        fputs("all", stdout);
        mica_regex_each_match(re, text, print_span, NULL);
        putchar('\n');
    } else if (command == 'R') {
        mica_string out = mica_regex_replace_all(re, text, extra, 0);
        fputs("text ", stdout);
        print_escaped(out.data, out.len);
        putchar('\n');
        mica_str_drop(&out);
    } else if (command == 'T') {
        long repeats = strtol(extra.data, NULL, 10);
        double best = 1e30;
        int64_t count = 0;
        for (long r = 0; r < repeats; r++) {
            double start = now();
            count = 0;
            mica_regex_each_match(re, text, count_match, &count);
            double took = now() - start;
            if (took < best) best = took;
        }
        printf("seconds %.9f matches %lld\n", best, (long long)count);
    }
    mica_free(found);
}

void mica_program(void) {
    size_t room = 0;
    char *line = NULL;
    ssize_t n;
    while ((n = getline(&line, &room, stdin)) > 0) {
        if (line[n - 1] == '\n') line[--n] = 0;
        char *fields[4] = {line, "", "", ""};
        for (int f = 1; f < 4; f++) {
            char *tab = strchr(fields[f - 1], '\t');
            if (!tab) break;
            *tab = 0;
            fields[f] = tab + 1;
        }
        mica_string pattern = {unescape(fields[1]), fields[1]};
        mica_string text = {unescape(fields[2]), fields[2]};
        mica_string extra = {unescape(fields[3]), fields[3]};
        mica_regex re = {0};
        if (!mica_regex_compile(pattern, &re)) {
            mica_string reason = mica_last_error();
            printf("error %s\n", reason.data);
            mica_str_drop(&reason);
        } else {
            answer(fields[0][0], re, text, extra);
            mica_regex_drop(&re);
        }
        fflush(stdout);
    }
    free(line);
}
