/* test_server_sampling.c - the precedence of default sampling values: server flag, then
 * generation_config.json, then hearth's built-in defaults; each source tried alone and over
 * the ones below it. */
#include "server/sampling.h"
#include "test.h"

static hearth_server_params unset(void) {
    hearth_server_params p = hearth_server_params_default();
    p.temperature = p.top_p = -1;
    p.top_k = p.max_tokens = -1;
    return p;
}

TEST(builtin_defaults_without_flags_or_config) {
    hearth_server_params p = unset();
    int32_t mt = -5;
    hearth_sampler_params s = hearth_sampling_defaults(&p, NULL, &mt);
    CHECK_NEAR(s.temperature, 0.7, 1e-6);
    CHECK_NEAR(s.top_p, 1.0, 0);
    CHECK_EQ(s.top_k, 0);
    CHECK_NEAR(s.min_p, 0.0, 0);
    CHECK_NEAR(s.repeat_penalty, 1.0, 0);
    CHECK_EQ(mt, 0);
    hearth_gen_defaults none = {0}; /* a config with nothing set changes nothing */
    s = hearth_sampling_defaults(&p, &none, &mt);
    CHECK_NEAR(s.temperature, 0.7, 1e-6);
    CHECK_EQ(mt, 0);
}

TEST(generation_config_over_builtin) {
    hearth_server_params p = unset();
    hearth_gen_defaults gd = {.has_temperature = true, .temperature = 0.6f, .has_top_p = true, .top_p = 0.9f,
                              .has_top_k = true, .top_k = 20, .has_min_p = true, .min_p = 0.05f,
                              .has_repetition_penalty = true, .repetition_penalty = 1.1f,
                              .has_max_new_tokens = true, .max_new_tokens = 300};
    int32_t mt = 0;
    hearth_sampler_params s = hearth_sampling_defaults(&p, &gd, &mt);
    CHECK_NEAR(s.temperature, 0.6, 1e-6);
    CHECK_NEAR(s.top_p, 0.9, 1e-6);
    CHECK_EQ(s.top_k, 20);
    CHECK_NEAR(s.min_p, 0.05, 1e-6);
    CHECK_NEAR(s.repeat_penalty, 1.1, 1e-6);
    CHECK_EQ(mt, 300);
    gd.has_do_sample = true; /* do_sample false: greedy, whatever its temperature */
    gd.do_sample = false;
    s = hearth_sampling_defaults(&p, &gd, &mt);
    CHECK_NEAR(s.temperature, 0.0, 0);
}

TEST(server_flags_over_generation_config) {
    hearth_server_params p = unset();
    p.temperature = 0.2;
    p.top_p = 0.5;
    p.top_k = 3;
    p.max_tokens = 64;
    hearth_gen_defaults gd = {.has_temperature = true, .temperature = 0.6f, .has_do_sample = true,
                              .do_sample = false, .has_top_p = true, .top_p = 0.9f, .has_top_k = true,
                              .top_k = 20, .has_max_new_tokens = true, .max_new_tokens = 300,
                              .has_min_p = true, .min_p = 0.05f};
    int32_t mt = 0;
    hearth_sampler_params s = hearth_sampling_defaults(&p, &gd, &mt);
    CHECK_NEAR(s.temperature, 0.2, 1e-6);
    CHECK_NEAR(s.top_p, 0.5, 1e-6);
    CHECK_EQ(s.top_k, 3);
    CHECK_EQ(mt, 64);
    CHECK_NEAR(s.min_p, 0.05, 1e-6); /* no flag for it: the config's stays */
    p.temperature = 0; /* an explicit 0 is a value, not "unset" */
    s = hearth_sampling_defaults(&p, NULL, &mt);
    CHECK_NEAR(s.temperature, 0.0, 0);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
