import { Resvg } from '@resvg/resvg-js';

export interface PngOptions {
  /** Output width in pixels; the height keeps the aspect ratio. Default: the SVG's own width. */
  readonly width?: number;
  /**
   * Extra .ttf/.otf files to load. System fonts are always loaded; pass a font here where none is
   * installed (a bare container), or the PNG comes out without text.
   */
  readonly fontFiles?: readonly string[];
}

/**
 * Rasterises an SVG to PNG with resvg (Rust, prebuilt binary: no canvas, no browser). Text uses the
 * SVG's font-family list; resvg falls back to any installed font when none of them is present.
 */
export function svgToPng(svg: string, options: PngOptions = {}): Buffer {
  if (options.width !== undefined && !(Number.isInteger(options.width) && options.width > 0)) {
    throw new Error(`PNG width must be a positive integer, got ${options.width}`);
  }
  const resvg = new Resvg(svg, {
    background: 'white',
    ...(options.width === undefined ? {} : { fitTo: { mode: 'width', value: options.width } }),
    font: {
      loadSystemFonts: true,
      fontFiles: [...(options.fontFiles ?? [])],
      defaultFontFamily: 'DejaVu Sans',
      sansSerifFamily: 'DejaVu Sans',
    },
  });
  return resvg.render().asPng();
}
