"""One router per family of endpoints; routers do not import each other."""
