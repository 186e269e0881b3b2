// The counted pre-tokens handed from the counter (counter.h) to the merger (merger.h).
//
// Contract: a view over one or two PretokenTables it does not own; valid until Release() or until the tables go.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "lmkit/bpe/train/pretoken_table.h"

namespace lmkit::bpe::train {

// The counted pre-tokens as the merger reads them: every key of `table`, then the keys in slots `rest_slots` of `rest`
// (a second table's keys that `table` lacks; the counts of its other keys were added to `table`), so that training
// never builds the union of the per-thread tables (see the performance notes of counter.cpp).
struct CountsView {
  PretokenTable* table = nullptr;
  PretokenTable* rest = nullptr;
  std::vector<uint64_t> rest_slots;

  size_t size() const { return table->size() + rest_slots.size(); }
  // An upper bound of the key bytes (for reserving).
  size_t key_bytes() const { return table->key_bytes() + (rest != nullptr ? rest->key_bytes() : 0); }
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    table->ForEach(fn);
    for (uint64_t slot : rest_slots) rest->VisitSlot(slot, fn);
  }
  // Frees both tables.
  void Release() {
    *table = PretokenTable();
    if (rest != nullptr) *rest = PretokenTable();
    rest_slots = {};
  }
};

}  // namespace lmkit::bpe::train
