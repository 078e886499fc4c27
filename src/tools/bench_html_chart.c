/* The inline SVG charts of splash bench's HTML report: per metric the
 * slots of every round with the noise band, the change per round against
 * what a verdict needs, and the chunk-gap distribution. Drawn here, in C,
 * so the page needs no script. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "tools/bench_html.h"

#define CHART_W 480
#define CHART_H 220
#define LEFT 60
#define TOP 42
#define BOTTOM 32
#define PLOT_W (CHART_W - LEFT - 10)
#define PLOT_H (CHART_H - TOP - BOTTOM)
#define GAP_BINS 24 /* log-spaced bins of the chunk-gap distribution */
#define COLOR_A "#3b75af"
#define COLOR_B "#ef8636"

static void svg_open(FILE *f, const char *id, const char *metric, const char *title, const char *unit)
{
    fprintf(f,
            "<figure><svg class=\"chart\" id=\"%s\" data-metric=\"%s\" role=\"img\" "
            "xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n<title>",
            id, metric, CHART_W, CHART_H, CHART_W, CHART_H);
    bh_esc(f, title);
    fprintf(f, "</title>\n<text x=\"%d\" y=\"14\" class=\"t\">", 4);
    bh_esc(f, title);
    if (unit)
        fprintf(f, " (%s)", unit);
    fprintf(f, "</text>\n");
}

/* The y axis from 0 (or lo) to hi in 4 steps, value labels with suffix. */
static void y_axis(FILE *f, double lo, double hi, const char *suffix)
{
    for (int t = 0; t <= 4; t++) {
        double y = TOP + PLOT_H - PLOT_H * t / 4.0;
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", LEFT, y, LEFT + PLOT_W, y);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" class=\"ax\" text-anchor=\"end\">%.3g%s</text>\n", LEFT - 4, y + 4,
                lo + (hi - lo) * t / 4, suffix);
    }
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#444\"/>\n", LEFT, TOP + PLOT_H, LEFT + PLOT_W,
            TOP + PLOT_H);
}

static void legend(FILE *f, int x, int y, const char *color, const char *text, bool is_band)
{
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"%s/>", x, y - 9, color,
            is_band ? " fill-opacity=\"0.18\" stroke=\"#999\"" : "");
    fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"ax\">%s</text>\n", x + 14, y, text);
}

/* Where B's value shows no change from A's a, given what a verdict needs
 * (thr): b/a - 1 within +-thr, or a/b - 1 for times. */
static void band(double a, double thr, bool is_higher_better, double *lo, double *hi)
{
    if (is_higher_better) {
        *lo = a * (1 - thr);
        *hi = a * (1 + thr);
    } else {
        *lo = a / (1 + thr);
        *hi = thr < 1 ? a / (1 - thr) : INFINITY;
    }
}

static double slots_vmax(const json_t *rounds, bool is_higher_better)
{
    double vmax = 0, bmax = 0;
    for (size_t k = 0; k < json_array_size(rounds); k++) {
        const json_t *r = json_array_get(rounds, k), *v = json_object_get(r, "values");
        for (size_t i = 0; i < 4; i++)
            vmax = fmax(vmax, json_number_value(json_array_get(v, i)));
        double lo, hi;
        band(bh_num(r, "a"), bh_num(r, "threshold"), is_higher_better, &lo, &hi);
        bmax = fmax(bmax, hi);
    }
    vmax = fmax(vmax, fmin(bmax, 2 * vmax)); /* the band, unless it would flatten the bars */
    return vmax > 0 ? vmax * 1.05 : 1;
}

static void slots_round(FILE *f, const json_t *r, size_t k, double bw, double vmax, bool is_higher_better)
{
    const json_t *v = json_object_get(r, "values");
    double x0 = LEFT + bw * (double)(k * 4), x1 = x0 + bw * 4;
#define Y(val) (TOP + PLOT_H - PLOT_H * fmax(0, fmin((val), vmax)) / vmax)
    double lo, hi;
    band(bh_num(r, "a"), bh_num(r, "threshold"), is_higher_better, &lo, &hi);
    fprintf(f,
            "<rect class=\"band\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
            "fill-opacity=\"0.18\"><title>round %zu: B between %.4g and %.4g is no change (needs %.2f %%)</title>"
            "</rect>\n",
            x0, Y(hi), x1 - x0, Y(lo) - Y(hi), COLOR_A, k + 1, lo, hi, 100 * bh_num(r, "threshold"));
    for (size_t i = 0; i < 4; i++) {
        double x = x0 + bw * (double)i, val = json_number_value(json_array_get(v, i));
        bool is_a = i == 0 || i == 3;
        fprintf(f,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>round %zu %c%zu: "
                "%.4g</title></rect>\n",
                x + bw * 0.15, Y(val), bw * 0.7, TOP + PLOT_H - Y(val), is_a ? COLOR_A : COLOR_B, k + 1,
                is_a ? 'A' : 'B', i + 1, val);
        if (bw >= 14)
            fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"ax\" text-anchor=\"middle\">%c%zu</text>\n", x + bw / 2,
                    TOP + PLOT_H + 12, is_a ? 'A' : 'B', i + 1);
    }
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#1b456f\" stroke-dasharray=\"4\"/>\n",
            x0, Y(bh_num(r, "a")), x1, Y(bh_num(r, "a")));
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#a04f10\" stroke-dasharray=\"4\"/>\n",
            x0, Y(bh_num(r, "b")), x1, Y(bh_num(r, "b")));
#undef Y
    if (bw * 4 >= 60)
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"ax\" text-anchor=\"middle\">round %zu: %s</text>\n",
                (x0 + x1) / 2, CHART_H - 2, k + 1, bh_str(r, "verdict"));
}

void bh_chart_slots(FILE *f, const char *key, const json_t *m)
{
    const json_t *rounds = json_object_get(m, "rounds");
    bool is_hb = json_is_true(json_object_get(m, "higher_is_better"));
    double vmax = slots_vmax(rounds, is_hb);
    char id[96], title[160];
    snprintf(id, sizeof id, "chart-%s", key);
    snprintf(title, sizeof title, "%s per slot", bh_str(m, "label"));
    svg_open(f, id, key, title, bh_str(m, "unit"));
    y_axis(f, 0, vmax, "");
    size_t n = json_array_size(rounds) * 4;
    double bw = n ? (double)PLOT_W / (double)n : 0;
    for (size_t k = 0; k < json_array_size(rounds); k++)
        slots_round(f, json_array_get(rounds, k), k, bw, vmax, is_hb);
    legend(f, LEFT, 31, COLOR_A, "A", false);
    legend(f, LEFT + 35, 31, COLOR_B, "B", false);
    legend(f, LEFT + 70, 31, COLOR_A, "no-change band around A", true);
    fprintf(f, "</svg><figcaption>Bars: each slot's value; dashed: the round's A and B means; shaded: where B "
               "would be no change.</figcaption></figure>\n");
}

/* One point of the change chart: the change at x with its +-needs band. */
static void change_point(FILE *f, const json_t *r, double x, double w, double lim, const char *name)
{
#define YC(c) (TOP + PLOT_H / 2.0 - (PLOT_H / 2.0) * fmax(-1, fmin(1, (c) / lim)))
    double c = 100 * bh_num(r, "change"), thr = 100 * bh_num(r, "threshold");
    const char *v = bh_str(r, "verdict");
    const char *color = !strncmp(v, "gain", 4)          ? "#070"
                        : !strncmp(v, "regression", 10) ? "#b00"
                        : !strncmp(v, "no change", 9)   ? "#444"
                                                        : "#b80";
    fprintf(f,
            "<rect class=\"band\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#888\" "
            "fill-opacity=\"0.18\"><title>%s: needs %.2f %%</title></rect>\n",
            x - w / 2, YC(thr), w, YC(-thr) - YC(thr), name, thr);
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"><title>%s: %+.2f %% (%s)</title></circle>\n", x,
            YC(c), color, name, c, v);
#undef YC
    if (w >= 40)
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"ax\" text-anchor=\"middle\">%s</text>\n", x, TOP + PLOT_H + 12,
                name);
}

void bh_chart_change(FILE *f, const char *key, const json_t *m)
{
    const json_t *rounds = json_object_get(m, "rounds"), *comb = json_object_get(m, "combined");
    size_t n = json_array_size(rounds);
    double lim = 0;
    for (size_t k = 0; k <= n; k++) {
        const json_t *r = k < n ? json_array_get(rounds, k) : comb;
        lim = fmax(lim, fmax(fabs(bh_num(r, "change")), bh_num(r, "threshold")));
    }
    lim = 100 * fmin(fmax(lim * 1.2, 0.05), 5); /* percent; beyond +-500 % points sit on the edge */
    char id[96], title[160];
    snprintf(id, sizeof id, "chart-%s-change", key);
    snprintf(title, sizeof title, "%s: change per round (%%)", bh_str(m, "label"));
    svg_open(f, id, key, title, NULL);
    y_axis(f, -lim, lim, " %");
    fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#444\"/>\n", LEFT, TOP + PLOT_H / 2.0,
            LEFT + PLOT_W, TOP + PLOT_H / 2.0);
    double w = (double)PLOT_W / (double)(n + 1);
    for (size_t k = 0; k <= n; k++) {
        char name[32];
        snprintf(name, sizeof name, k < n ? "round %zu" : "combined", k + 1);
        change_point(f, k < n ? json_array_get(rounds, k) : comb, LEFT + w * ((double)k + 0.5), w * 0.8, lim, name);
    }
    legend(f, LEFT, 31, "#888", "needs: max(2 %, 2 x noise)", true);
    fprintf(f, "</svg><figcaption>Dots: the change of each round and combined, coloured by verdict; shaded: the "
               "change a verdict needs.</figcaption></figure>\n");
}

/* The chunk-gap distribution of both arms: fraction of gaps per
 * log-spaced bin, A and B as adjacent bars. */
void bh_chart_gaps(FILE *f, const json_t *dist)
{
    const json_t *ga = json_object_get(dist, "A"), *gb = json_object_get(dist, "B");
    double lo = INFINITY, hi = 0;
    const json_t *arrs[2] = {ga, gb};
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < json_array_size(arrs[k]); i++) {
            double g = json_number_value(json_array_get(arrs[k], i));
            if (g > 0) {
                lo = fmin(lo, g);
                hi = fmax(hi, g);
            }
        }
    svg_open(f, "chart-gaps", "gaps", "decode chunk gaps (ms, log bins)", NULL);
    const int left = LEFT, top = TOP, plot_h = PLOT_H, plot_w = PLOT_W;
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#444\"/>\n", left, top + plot_h, left + plot_w,
            top + plot_h);
    if (!(hi > 0)) {
        fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"ax\">no gaps recorded (no mixed workload)</text>\n", left + 10,
                top + plot_h / 2);
        fprintf(f, "</svg></figure>\n");
        return;
    }
    if (hi <= lo)
        hi = lo * 1.01 + 1e-6;
    double llo = log10(lo), lhi = log10(hi) + 1e-9;
    double frac[2][GAP_BINS] = {{0}};
    double fmaxv = 0;
    for (int k = 0; k < 2; k++) {
        size_t n = json_array_size(arrs[k]);
        for (size_t i = 0; i < n; i++) {
            double g = json_number_value(json_array_get(arrs[k], i));
            if (!(g > 0))
                continue;
            int b = (int)((log10(g) - llo) / (lhi - llo) * GAP_BINS);
            b = b < 0 ? 0 : b >= GAP_BINS ? GAP_BINS - 1 : b;
            frac[k][b] += 1.0 / (double)n;
        }
        for (int b = 0; b < GAP_BINS; b++)
            fmaxv = fmax(fmaxv, frac[k][b]);
    }
    double bw = (double)plot_w / GAP_BINS;
    for (int b = 0; b < GAP_BINS; b++) {
        for (int k = 0; k < 2; k++) {
            double h = plot_h * frac[k][b] / fmaxv;
            fprintf(f,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>%c: %.1f%% of "
                    "gaps in [%.3g, %.3g) ms</title></rect>\n",
                    left + bw * b + bw * 0.5 * k, top + plot_h - h, bw * 0.45, h, k ? COLOR_B : COLOR_A, k ? 'B' : 'A',
                    100 * frac[k][b], pow(10, llo + (lhi - llo) * b / GAP_BINS),
                    pow(10, llo + (lhi - llo) * (b + 1) / GAP_BINS));
        }
        if (b % 4 == 0)
            fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"ax\" text-anchor=\"middle\">%.3g</text>\n", left + bw * b,
                    top + plot_h + 14, pow(10, llo + (lhi - llo) * b / GAP_BINS));
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"ax\" fill=\"#3b75af\">A (%zu gaps)</text>", left, 31,
            json_array_size(ga));
    fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"ax\" fill=\"#ef8636\">B (%zu gaps)</text>", left + 100, 31,
            json_array_size(gb));
    fprintf(f, "</svg><figcaption>The streaming chunk gaps of the mixed workload's decode request: the "
               "fraction of each arm's gaps per bin.</figcaption></figure>\n");
}
