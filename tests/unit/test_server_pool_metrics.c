/* test_server_pool_metrics.c - the merge behind /metrics of `serve --isolate`
 * (server/pool_metrics.h): each family once with one HELP and one TYPE, its samples together
 * (the serving process's, then each child's), model="<id>" put first in a child's label sets
 * (escaped), an empty label set and a sample without labels handled, a child's hearth_info and
 * its other comments left out, a label `model` already there kept, and a family only a child
 * has added in the order it first appears. */
#include "server/pool_metrics.h"
#include "test.h"

#include <string.h>

static const char parent[] = "# HELP hearth_info Build.\n# TYPE hearth_info gauge\n"
                             "hearth_info{version=\"1\",model=\"a/b\"} 1\n"
                             "# HELP hearth_requests_total Requests.\n# TYPE hearth_requests_total counter\n"
                             "hearth_requests_total{endpoint=\"chat\",code=\"2xx\"} 3\n"
                             "# HELP hearth_ttft_seconds TTFT.\n# TYPE hearth_ttft_seconds histogram\n"
                             "hearth_ttft_seconds_bucket{le=\"+Inf\"} 0\nhearth_ttft_seconds_sum 0\n"
                             "hearth_ttft_seconds_count 0\n";

static const char child[] = "# HELP hearth_info Build.\n# TYPE hearth_info gauge\n"
                            "hearth_info{version=\"1\",model=\"a/b\"} 1\n"
                            "# a comment of the child's\n"
                            "# HELP hearth_requests_total Requests.\n# TYPE hearth_requests_total counter\n"
                            "hearth_requests_total{endpoint=\"chat\",code=\"2xx\"} 2\n"
                            "# HELP hearth_ttft_seconds TTFT.\n# TYPE hearth_ttft_seconds histogram\n"
                            "hearth_ttft_seconds_bucket{le=\"+Inf\"} 2\nhearth_ttft_seconds_sum 0.5\n"
                            "hearth_ttft_seconds_count 2\n"
                            "# HELP hearth_kv_blocks_free Free.\n# TYPE hearth_kv_blocks_free gauge\n"
                            "hearth_kv_blocks_free 7\n"
                            "hearth_untyped{} 1\n"
                            "hearth_labelled{model=\"own\",x=\"y\"} 4\n";

static const char want[] =
    "# HELP hearth_info Build.\n# TYPE hearth_info gauge\n"
    "hearth_info{version=\"1\",model=\"a/b\"} 1\n"
    "# HELP hearth_requests_total Requests.\n# TYPE hearth_requests_total counter\n"
    "hearth_requests_total{endpoint=\"chat\",code=\"2xx\"} 3\n"
    "hearth_requests_total{model=\"o/q\\\"\\\\\",endpoint=\"chat\",code=\"2xx\"} 2\n"
    "# HELP hearth_ttft_seconds TTFT.\n# TYPE hearth_ttft_seconds histogram\n"
    "hearth_ttft_seconds_bucket{le=\"+Inf\"} 0\nhearth_ttft_seconds_sum 0\nhearth_ttft_seconds_count 0\n"
    "hearth_ttft_seconds_bucket{model=\"o/q\\\"\\\\\",le=\"+Inf\"} 2\n"
    "hearth_ttft_seconds_sum{model=\"o/q\\\"\\\\\"} 0.5\n"
    "hearth_ttft_seconds_count{model=\"o/q\\\"\\\\\"} 2\n"
    "# HELP hearth_kv_blocks_free Free.\n# TYPE hearth_kv_blocks_free gauge\n"
    "hearth_kv_blocks_free{model=\"o/q\\\"\\\\\"} 7\n"
    "hearth_untyped{model=\"o/q\\\"\\\\\"} 1\n"
    "hearth_labelled{model=\"own\",x=\"y\"} 4\n";

TEST(merges_a_child_into_the_parent) {
    hearth_prom_part parts[] = {{parent, strlen(parent), NULL}, {child, strlen(child), "o/q\"\\"}};
    hearth_buf out = {0};
    CHECK(hearth_prom_merge(parts, 2, &out));
    CHECK_STR(out.p ? out.p : "", want);
    hearth_buf_fini(&out);
}

TEST(two_children_share_each_family) {
    static const char a[] = "# HELP t_total T.\n# TYPE t_total counter\nt_total 1\n";
    hearth_prom_part parts[] = {{a, strlen(a), NULL}, {a, strlen(a), "m1"}, {a, strlen(a), "m2"}};
    hearth_buf out = {0};
    CHECK(hearth_prom_merge(parts, 3, &out));
    CHECK_STR(out.p ? out.p : "", "# HELP t_total T.\n# TYPE t_total counter\nt_total 1\n"
                                  "t_total{model=\"m1\"} 1\nt_total{model=\"m2\"} 1\n");
    hearth_buf_fini(&out);
}

TEST(a_text_without_final_newline_or_with_blank_lines) {
    static const char a[] = "\n# TYPE g gauge\n\ng 5";
    hearth_prom_part parts[] = {{a, strlen(a), "m"}};
    hearth_buf out = {0};
    CHECK(hearth_prom_merge(parts, 1, &out));
    CHECK_STR(out.p ? out.p : "", "# TYPE g gauge\ng{model=\"m\"} 5\n");
    hearth_buf_fini(&out);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
