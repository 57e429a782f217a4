/* The verdict of `ftc demo`: reads the summaries of its two `ftc run` jobs
 * (fault-free reference and the run under failures), prints what a user
 * wants to know and writes it as JSON. */
#ifndef FTC_TOOLS_DEMO_REPORT_H
#define FTC_TOOLS_DEMO_REPORT_H

typedef struct demo_report_in {
    const char *title;          /* e.g. "FT-DDP" */
    long steps;                 /* committed steps asked */
    double tolerance;           /* relative final-loss tolerance */
    const char *reference_json; /* --summary-json of the fault-free run */
    const char *faulted_json;   /* --summary-json of the run under failures */
    const char *out_json;       /* the demo's own summary; NULL: none */
} demo_report_in;

/* Prints the comparison. Returns 0 when the faulted run committed every
 * step, every finished replica ended bit-identical and its final loss is
 * within tolerance of the reference's; 1 otherwise (the reason printed). */
int demo_report(const demo_report_in *in);

#endif
