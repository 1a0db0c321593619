/*
 * store_api.h - the model store over HTTP (docs/server.md "The model store"):
 *
 *   GET  /library               every model of the registry (the hub cache, rescanned first)
 *                               with its facts, its fit on this machine and whether it serves
 *   GET  /fit?model=Q[&ctx=N]   fit's judgement of one model (the serving one without model)
 *   GET  /downloads             the recent downloads started here (server/downloads.h)
 *   POST /downloads             {"repo":"org/name","file":GLOB?,"revision":REV?} -> 202 {"id"}
 *
 * /library shares its path with the web app's deep link: a browser navigation (Accept:
 * text/html) is sent to the app, anything else gets the JSON, behind the API key like the rest.
 * POST /downloads wants Content-Type: application/json, which a cross-origin page cannot send
 * without a CORS preflight, so a web page the user visits cannot start downloads here.
 *
 * Thread rule: handlers run on the connection's thread; each opens its own registry handle.
 */
#pragma once
#include "server/server_internal.h"

void hearth_store_library(hearth_http_req *r);
void hearth_store_fit(hearth_http_req *r);
void hearth_store_downloads(hearth_http_req *r);
void hearth_store_download_start(hearth_http_req *r);
