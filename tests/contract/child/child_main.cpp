#include "leader/leader.hpp"
int main() { return 0; }
