// stack_cxx [N] (built at -O2 so inlining happens): C++ frames, N times each (default 3).
//
//   main -> stk::Widget::make(int) -> operator new(STK_CXX_WIDGET)
//     make is a static member function in a namespace: its frame must be demangled in full,
//     "stk::Widget::make(int)".
//   main -> stk::outer(int) -> [stk::inlined_helper(int), always_inline] -> operator new(STK_CXX_GADGET)
//     the helper is inlined into outer, so the return address of operator new lies in inlined
//     code: that one address must come out as two frames, the helper (inlined) then outer.
//
// Every object is deleted again.
#include <cstddef>

#include "fixture.h"
#include "stack_sizes.h"

namespace stk {

struct Widget {
    char bytes[STK_CXX_WIDGET];
    static Widget* make(int tag);
};
static_assert(sizeof(Widget) == STK_CXX_WIDGET);

struct Gadget {
    char bytes[STK_CXX_GADGET];
};
static_assert(sizeof(Gadget) == STK_CXX_GADGET);

__attribute__((noinline)) Widget* Widget::make(int tag) {
    Widget* w = new Widget;  // STACK_MARK(widget-make-new)
    w->bytes[0] = static_cast<char>(tag);
    fx_escape(w);
    return static_cast<Widget*>(fx_launder(w));
}

__attribute__((always_inline)) inline Gadget* inlined_helper(int tag) {
    Gadget* g = new Gadget;  // STACK_MARK(inlined-helper-new)
    g->bytes[0] = static_cast<char>(tag);
    fx_escape(g);
    return g;
}

__attribute__((noinline)) Gadget* outer(int tag) {
    Gadget* g = inlined_helper(tag);  // STACK_MARK(outer-calls-helper)
    fx_escape(g);
    return static_cast<Gadget*>(fx_launder(g));
}

}  // namespace stk

int main(int argc, char** argv) {
    unsigned n = fx_count(argc, argv, 3);
    for (unsigned i = 0; i < n; i++) {
        stk::Widget* w = stk::Widget::make(static_cast<int>(i));  // STACK_MARK(main-calls-make)
        stk::Gadget* g = stk::outer(static_cast<int>(i));        // STACK_MARK(main-calls-outer)
        delete static_cast<stk::Widget*>(fx_launder(w));
        delete static_cast<stk::Gadget*>(fx_launder(g));
    }
    return 0;
}
