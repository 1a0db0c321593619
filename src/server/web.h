/*
 * web.h - the built-in web app's routes (router.c's table points at these).
 *
 *   GET /                       the app (index.html); lands on #/chat
 *   GET /chat, /status, /library 302 to /#/chat, /#/status, /#/library (deep links)
 *   GET /app/NAME               the app's other files (app.css, app.js)
 *   GET /v1/app/config          what the app needs to start: model, context, sampling defaults
 *
 * The files are embedded at build time (web_assets.h), so the app works offline and with no
 * files beside the binary. They are public even with --api-key (a browser cannot send a bearer
 * token on navigation); the app sends the key on its API calls once the user enters it.
 */
#pragma once
#include "server/server_internal.h"

void hearth_web_index(hearth_http_req *r);
void hearth_web_deep_link(hearth_http_req *r);
void hearth_web_file(hearth_http_req *r);
void hearth_web_config(hearth_http_req *r);
