// RUN: parc-opt %s --apply-remat=mode=sometimes -verify-diagnostics -split-input-file
// RUN: not parc-opt %s --apply-remat=mode=every:0 2>&1 | FileCheck %s --check-prefix=EVERY0
// RUN: not parc-opt %s "--apply-remat=mode=full scope=audio" 2>&1 | FileCheck %s --check-prefix=SCOPE
// RUN: not parc-opt %s "--apply-remat=mode=full frozen=model.nothing" 2>&1 | FileCheck %s --check-prefix=FROZEN

// expected-error@+1 {{unknown remat mode 'sometimes' (expected full, selective, every:N with N > 0, or none)}}
parc.model @m class "M" {
}

// EVERY0: unknown remat mode 'every:0'
// SCOPE: unknown remat scope 'audio' (expected all, language or vision)
// FROZEN: frozen path 'model.nothing' names no module of @m
