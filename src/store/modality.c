/*
 * modality.c - does a model carry a vision or audio tower? See modality.h for the rules.
 *
 * A safetensors snapshot is judged by config.json plus its tensor names (index weight_map, or
 * each file's header); a GGUF by the projector files beside it. Nothing here reads weight
 * bytes: a probe costs a config parse and a few headers.
 */
#include "store/modality.h"

#include "base/file.h"
#include "model/gguf.h"
#include "model/safetensors.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

enum { MAX_CONFIG_BYTES = 4 << 20, MAX_INDEX_BYTES = 64 << 20 };

static bool has_suffix(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

/* Does some dot-separated component of name equal one of words? */
static bool has_component(const char *name, const char *const *words, size_t n_words) {
    for (const char *p = name; *p;) {
        size_t len = strcspn(p, ".");
        for (size_t k = 0; k < n_words; k++)
            if (strlen(words[k]) == len && !strncmp(p, words[k], len)) return true;
        p += len;
        if (*p == '.') p++;
    }
    return false;
}

static const char *const vision_words[] = {"vision_tower", "visual", "vision_model", "vision_encoder"};
static const char *const audio_words[] = {"audio_tower", "audio_model", "audio_encoder"};

typedef struct {
    bool vision, audio; /* tower weights seen */
} tower_names;

static void note_name(tower_names *t, const char *name) {
    if (has_component(name, vision_words, sizeof vision_words / sizeof vision_words[0])) t->vision = true;
    if (has_component(name, audio_words, sizeof audio_words / sizeof audio_words[0])) t->audio = true;
}

/* The tensor names of the snapshot in dir into t: the index's weight_map when there is one,
 * else every *.safetensors header. */
static hearth_status scan_names(const char *dir, tower_names *t, hearth_err *err) {
    char path[4352];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    char *idx = hearth_file_read(path, MAX_INDEX_BYTES, NULL);
    if (idx) {
        cJSON *j = cJSON_Parse(idx);
        free(idx);
        const cJSON *map = cJSON_GetObjectItemCaseSensitive(j, "weight_map");
        if (!cJSON_IsObject(map)) {
            cJSON_Delete(j);
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s has no weight_map object", path);
        }
        for (const cJSON *e = map->child; e; e = e->next)
            if (e->string) note_name(t, e->string);
        cJSON_Delete(j);
        return HEARTH_OK;
    }
    DIR *d = opendir(dir);
    if (!d) return hearth_err_set(err, HEARTH_E_IO, -1, "cannot read %s", dir);
    hearth_status st = HEARTH_OK;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' || !has_suffix(de->d_name, ".safetensors")) continue;
        struct stat fs;
        if (snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= (int)sizeof path || stat(path, &fs) != 0 ||
            !S_ISREG(fs.st_mode))
            continue; /* a dangling link: the blob is gone */
        hearth_st *f = NULL;
        hearth_err e = {0};
        if ((st = hearth_st_open(path, &f, &e))) {
            hearth_err_set(err, st, -1, "%s: %s", de->d_name, e.msg);
            break;
        }
        for (int64_t i = 0; i < hearth_st_n_tensors(f); i++) note_name(t, hearth_st_tensor_at(f, i)->name);
        hearth_st_close(f);
    }
    closedir(d);
    return st;
}

static hearth_status probe_snapshot(const char *dir, hearth_modality *out, hearth_err *err) {
    char path[4352];
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *text = hearth_file_read(path, MAX_CONFIG_BYTES, NULL);
    if (!text) return hearth_err_set(err, HEARTH_E_NOTFOUND, -1, "no readable config.json in %s", dir);
    cJSON *cfg = cJSON_Parse(text);
    free(text);
    hearth_status st = HEARTH_OK;
    if (!cJSON_IsObject(cfg)) {
        st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "config.json in %s is not a JSON object", dir);
        goto done;
    }
    bool vcfg = cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(cfg, "vision_config"));
    bool acfg = cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(cfg, "audio_config"));
    if (!vcfg && !acfg) {
        snprintf(out->source, sizeof out->source, "config.json has no vision_config");
        goto done;
    }
    tower_names t = {0};
    if ((st = scan_names(dir, &t, err))) goto done;
    out->vision = vcfg && t.vision;
    out->audio = acfg && t.audio;
    if (out->vision) snprintf(out->source, sizeof out->source, "config.json vision_config and vision tower weights");
    else if (vcfg)
        snprintf(out->source, sizeof out->source,
                 "config.json has a vision_config but the checkpoint holds no vision tower weights");
    else snprintf(out->source, sizeof out->source, "config.json has no vision_config");
done:
    cJSON_Delete(cfg);
    return st;
}

bool hearth_modality_is_projector(const char *path, bool *vision, bool *audio, hearth_err *err) {
    if (vision) *vision = false;
    if (audio) *audio = false;
    hearth_gguf *g = NULL;
    if (hearth_gguf_open(path, &g, err)) return false;
    hearth_span s;
    bool proj = (hearth_gguf_get_str(g, "general.type", &s) && hearth_span_eq(s, "mmproj")) ||
                (hearth_gguf_get_str(g, "general.architecture", &s) && hearth_span_eq(s, "clip"));
    bool v = false, a = false;
    if (proj) {
        if (!hearth_gguf_get_bool(g, "clip.has_vision_encoder", &v)) v = false;
        if (!hearth_gguf_get_bool(g, "clip.has_audio_encoder", &a)) a = false;
    }
    hearth_gguf_close(g);
    if (vision) *vision = v;
    if (audio) *audio = a;
    return proj;
}

/* Look for projectors in dir (skipping the model file itself). The model has each tower some
 * projector there has; its projector is the first by name with a vision encoder, else the
 * first with an audio one (directory order must not decide). */
static void find_projectors(const char *dir, const char *model_real, hearth_modality *out) {
    DIR *d = opendir(dir);
    if (!d) return;
    char best[4096] = "", best_name[256] = "";
    bool best_vision = false;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *nm = de->d_name;
        if (nm[0] == '.' || !has_suffix(nm, ".gguf") || !strcasestr(nm, "mmproj")) continue;
        char p[4352], real[4352];
        struct stat st;
        if (snprintf(p, sizeof p, "%s/%s", dir, nm) >= (int)sizeof best || stat(p, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (model_real && realpath(p, real) && !strcmp(real, model_real)) continue;
        bool v = false, a = false;
        hearth_err e = {0};
        if (!hearth_modality_is_projector(p, &v, &a, &e)) {
            if (e.msg[0]) snprintf(out->note, sizeof out->note, "%.80s is unreadable: %.150s", nm, e.msg);
            continue;
        }
        out->vision |= v;
        out->audio |= a;
        if (!v && !a) continue;
        /* a vision projector beats an audio-only one; among equals the earlier name wins */
        bool better = !best[0] || (v && !best_vision) || (v == best_vision && strcmp(p, best) < 0);
        if (!better) continue;
        memcpy(best, p, strlen(p) + 1); /* fits: checked above */
        snprintf(best_name, sizeof best_name, "%s", nm);
        best_vision = v;
    }
    closedir(d);
    if (!best[0]) return;
    snprintf(out->projector, sizeof out->projector, "%s", best);
    snprintf(out->source, sizeof out->source, "projector %.160s", best_name);
}

/* For a model below ".../snapshots/<rev>/sub/...", the folder ".../snapshots/<rev>" into top;
 * false when the model is not in a snapshot subfolder. */
static bool snapshot_top(const char *model_dir, char *top, size_t cap) {
    const char *s = strstr(model_dir, "/snapshots/");
    if (!s) return false;
    const char *rev = s + strlen("/snapshots/");
    const char *slash = strchr(rev, '/');
    if (!slash || slash == rev || !slash[1]) return false; /* the model sits in the top folder */
    return snprintf(top, cap, "%.*s", (int)(slash - model_dir), model_dir) < (int)cap;
}

hearth_status hearth_modality_probe(const char *model_path, hearth_modality *out, hearth_err *err) {
    memset(out, 0, sizeof *out);
    struct stat st;
    if (!model_path || stat(model_path, &st) != 0)
        return hearth_err_set(err, HEARTH_E_NOTFOUND, -1, "no model at %s", model_path ? model_path : "(none)");
    if (S_ISDIR(st.st_mode)) return probe_snapshot(model_path, out, err);
    char dir[4352], real[4352];
    const char *slash = strrchr(model_path, '/');
    if (slash) snprintf(dir, sizeof dir, "%.*s", (int)(slash - model_path), model_path);
    else snprintf(dir, sizeof dir, ".");
    if (!dir[0]) snprintf(dir, sizeof dir, "/");
    if (has_suffix(model_path, ".safetensors")) return probe_snapshot(dir, out, err);
    snprintf(out->source, sizeof out->source, "no projector (mmproj) GGUF beside it");
    const char *mreal = realpath(model_path, real) ? real : NULL;
    find_projectors(dir, mreal, out);
    char top[4352];
    if (!out->projector[0] && snapshot_top(dir, top, sizeof top)) find_projectors(top, mreal, out);
    return HEARTH_OK;
}
