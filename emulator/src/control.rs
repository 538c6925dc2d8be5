//! The control API, under `/__laneway/`: inject and clear faults while traffic flows, read what
//! the emulator served. Unsigned: it is for tests on loopback.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::engine::Engine;
use crate::faults::Fault;

/// The control routes.
pub(crate) fn routes() -> Router<Arc<Engine>> {
    Router::new()
        .route(
            "/__laneway/health",
            get(|| async { Json(json!({ "ok": true })) }),
        )
        .route(
            "/__laneway/faults",
            post(add_fault).get(list_faults).delete(clear_faults),
        )
        .route("/__laneway/faults/{id}", delete(remove_fault))
        .route("/__laneway/counters", get(counters))
        .route("/__laneway/counters/reset", post(reset_counters))
}

async fn add_fault(State(engine): State<Arc<Engine>>, Json(fault): Json<Fault>) -> Json<Value> {
    Json(json!({ "id": engine.faults.add(fault) }))
}

async fn list_faults(State(engine): State<Arc<Engine>>) -> Json<Value> {
    let faults: Vec<Value> = engine
        .faults
        .list()
        .into_iter()
        .map(|(id, f)| json!({ "id": id, "fault": f }))
        .collect();
    Json(json!({ "faults": faults }))
}

async fn clear_faults(State(engine): State<Arc<Engine>>) -> StatusCode {
    engine.faults.clear();
    StatusCode::NO_CONTENT
}

async fn remove_fault(State(engine): State<Arc<Engine>>, Path(id): Path<u64>) -> StatusCode {
    if engine.faults.remove(id) {
        StatusCode::NO_CONTENT
    } else {
        StatusCode::NOT_FOUND
    }
}

async fn counters(State(engine): State<Arc<Engine>>) -> Json<Value> {
    Json(json!({ "counters": engine.counters() }))
}

async fn reset_counters(State(engine): State<Arc<Engine>>) -> StatusCode {
    engine.reset_counters();
    StatusCode::NO_CONTENT
}
